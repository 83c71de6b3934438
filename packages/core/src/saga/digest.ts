import { readFileSync } from "node:fs";
import { configDigest } from "../render/server-config.js";
import type { RootLayout } from "../root/layout.js";

/** sha256 of the bytes at server.conf now, or undefined when there is no file. */
export function digestOfServerConf(layout: RootLayout): string | undefined {
  try {
    return configDigest(readFileSync(layout.serverConf));
  } catch {
    return undefined;
  }
}
