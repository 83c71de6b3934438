/**
 * @cotal/saga/server-process: the nats-server process plumbing, one module per concern, shared by
 * the core's brokers and by @cotal/harness (the way nats.js's test server reuses core internals).
 */
export { NATS_SERVER_PATHS, builtServers, natsServerBinary, natsServerVersion } from "../broker/binary.js";
export { spawnServer, untilReady, type ServerChild, type ServerExit, type SpawnServerOptions } from "../broker/spawn-server.js";
export { RELOAD_FAILED, RELOAD_OK, SERVER_READY, logOffset, readLogSince, reloadLineDigest, tail, watchLog, watchLogSource, fileLogSource, type LogSource, type LogWatchEnd } from "../broker/log-proof.js";
export { stopProcess } from "../broker/stop-process.js";
export { pidAlive } from "../lock/process-identity.js";
export { freePort, freePorts } from "../broker/free-port.js";
export { parseServerVersion, versionAtLeast, type ServerVersion } from "../broker/server-features.js";
