import { readFileSync } from "node:fs";
import { join } from "node:path";
import { freePort, tempRoot } from "@cotal/harness";
import { RootLayout, down, up, type UpResult } from "@cotal/core";
import { loadSpaceAccount } from "@cotal/core/root";
import { mintUserCreds } from "@cotal/core/trust";
import { onCleanup } from "./cleanup.js";

export interface BenchRoot {
  root: string;
  layout: RootLayout;
  port: number;
  started: UpResult;
}

/** A throwaway cotal root in the OS temp dir with a running (detached) broker on a free loopback port. */
export async function startCotalRoot(prefix: string): Promise<BenchRoot> {
  const tmp = await tempRoot(`cotal-bench-${prefix}-`);
  onCleanup(`remove ${tmp.path}`, () => tmp.cleanup());
  const root = join(tmp.path, ".cotal");
  const port = await freePort();
  onCleanup(`stop the broker of ${root}`, () => down({ root, graceMs: 10_000 }));
  const started = await up({ root, detach: true, port, host: "127.0.0.1", space: "default" });
  return { root, layout: new RootLayout(root), port, started };
}

/** "Reloaded server configuration" lines in one nats-server log so far (a root's, or one cluster node's). */
export function reloadLines(file: string): number {
  let text = "";
  try {
    text = readFileSync(file, "utf8");
  } catch {
    return 0;
  }
  return text.split("\n").filter((l) => l.includes("Reloaded server configuration")).length;
}

/** "Reloaded server configuration" lines in the root's nats-server log so far. */
export function reloadCount(layout: RootLayout): number {
  return reloadLines(layout.logFile);
}

/** A fresh in-memory user creds text of a space (signed by its signing key). */
export function spaceCreds(layout: RootLayout, space: string, user = "bench"): string {
  const rec = loadSpaceAccount(layout, space);
  if (!rec) throw new Error(`space ${space} has no record on ${layout.root}`);
  return mintUserCreds(rec, { name: user, expiresInSeconds: 3600 }).creds;
}

export function names(prefix: string, from: number, count: number): string[] {
  return Array.from({ length: count }, (_, i) => `${prefix}${String(from + i).padStart(5, "0")}`);
}
