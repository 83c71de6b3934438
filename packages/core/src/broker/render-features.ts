import type { RootLayout } from "../root/layout.js";
import { natsServerVersion } from "./binary.js";
import { brokerState } from "./runtime.js";
import { serverFeatures, type ServerFeatures } from "./server-features.js";

/**
 * The features of the server that will read this config: the running broker's (its version was
 * read from its binary at start) when one serves the root, else the binary the next `up` starts.
 */
export function renderFeatures(layout: RootLayout): ServerFeatures {
  const state = brokerState(layout);
  return serverFeatures(state.running ? state.runtime.serverVersion : natsServerVersion());
}
