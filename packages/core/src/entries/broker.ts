// @cotal/core/broker: a root's broker below the verbs (render, reload proof, connections, runtime), for benchmarks and live tests.
export { FEATURE_SINCE, serverFeatures, type ServerFeatures } from "../broker/server-features.js";
export { stopBroker } from "../broker/process.js";
export { readRuntime } from "../broker/runtime.js";
export { foregroundEnd, takeStopIntent } from "../broker/stop-intent.js";
export { serversOfRoot } from "../broker/server-scan.js";
export { connectAsAccount, connectWithCreds } from "../broker/connect.js";
export { renderRoot } from "../broker/render-root.js";
export { configDigest, serverConfig } from "../render/server-config.js";
export { natsConfigDigest } from "../render/nats-digest.js";
export { reloadAndProve } from "../saga/reload.js";
export { MaterialReader, publishMaterial, type MaterialKv } from "../broker/material-bucket.js";
export type { NodeBase } from "../broker/node-material.js";
export { heldAccountJwt } from "../broker/node-hold.js";
