// `@cotal/saga/broker`: the nats-server binary, its process and log, its config and reload, connections.
export { natsServerBinary, natsServerVersion } from "../broker/binary.js";
export { FEATURE_SINCE, parseServerVersion, serverFeatures, versionAtLeast, type ServerFeatures, type ServerVersion } from "../broker/server-features.js";
export { stopBroker } from "../broker/process.js";
export { readRuntime, type BrokerRuntime } from "../broker/runtime.js";
export { serversOfRoot } from "../broker/server-scan.js";
export { RELOAD_OK, logOffset, readLogSince } from "../broker/log-proof.js";
export { connectAsAccount, connectWithCreds } from "../broker/connect.js";
export { renderRoot } from "../broker/render-root.js";
export { configDigest, serverConfig } from "../render/server-config.js";
export { reloadAndProve } from "../saga/reload.js";
