// @cotal/core/server-process: nats-server process plumbing (binary, spawn, log proof, ports) that @cotal/harness and scripts/servers.sh reuse.
export { natsServerBinary, natsServerVersion } from "../broker/binary.js";
export { spawnServer, untilReady, type ServerChild } from "../broker/spawn-server.js";
export { RELOAD_FAILED, RELOAD_OK, SERVER_READY, logOffset, readLogSince, tail, watchLogSource, type LogSource } from "../broker/log-proof.js";
export { stopProcess } from "../broker/stop-process.js";
export { pidAlive } from "../lock/process-identity.js";
export { freePort, freePorts } from "../broker/free-port.js";
export { parseServerVersion, versionAtLeast, type ServerVersion } from "../broker/server-features.js";
