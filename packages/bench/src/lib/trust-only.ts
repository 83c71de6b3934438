import { GUARDS_ON } from "@cotal/core/light";
import { RootLayout } from "@cotal/core";
import { acquireMaintenanceLock, releaseMaintenanceLock } from "@cotal/core/root";
import { decisionRead, openLiveSession, runMutation } from "@cotal/core/inventory";

/**
 * The saga of `space add` without its provisioning pool (claim, materialise, render, reload, proof,
 * commit): a bench reaches 10,000+ tenants where the broker's open-file limit forbids their streams.
 */
export async function trustOnly(root: string, batch: string[]): Promise<void> {
  const layout = new RootLayout(root);
  const session = await openLiveSession(layout, "bench trust", { guards: GUARDS_ON });
  const lock = acquireMaintenanceLock(root, "bench: trust only", GUARDS_ON);
  try {
    const decided = await decisionRead(session.store);
    const r = await runMutation(session.envWith(lock), { op: "batch", adds: batch, verb: "space add" }, decided);
    if (r.outcome !== "committed") throw new Error(`trust: outcome ${r.outcome}`);
  } finally {
    releaseMaintenanceLock(lock);
    await session.close();
  }
}
