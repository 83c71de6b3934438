/**
 * The saga's render from the verb's inventory view (issue 15: one read of the records per verb):
 * the view stands in for a record only while the record still stands at the revision the view was
 * read after, and never for a record the claim itself writes. Each cell reads server.conf.
 */
import { afterEach, describe, expect, it } from "vitest";
import { certainInventory, loadSpaceAccount } from "../src/root/account-store.js";
import { loadBrokerTrust } from "../src/root/broker-store.js";
import type { AccountRecord } from "../src/root/records.js";
import { decisionRead, runMutation, type DiskView, type MutationIntent } from "../src/saga/mutation.js";
import { resignAccountLimits } from "../src/trust/account.js";
import { memorySaga, type MemorySaga } from "../src/testing/index.js";
import { add, confText, expectConverged } from "./saga-memory-helpers.js";
import { GUARDS_ON } from "../src/guards.js";

let s: MemorySaga;
afterEach(() => {
  s?.close();
});

/** The verb's order (verb/verb.ts): the decision read, then the inventory under the lock. */
async function viewNow(m: MemorySaga): Promise<{ decided: Awaited<ReturnType<typeof decisionRead>>; view: DiskView }> {
  const decided = await decisionRead(m.env.store);
  return { decided, view: { revision: decided.revision, records: certainInventory(m.root.layout) } };
}

function resigned(m: MemorySaga, space: string, maxConns: number): { from: string; to: string } {
  const rec = loadSpaceAccount(m.root.layout, space) as AccountRecord;
  return { from: rec.jwt, to: resignAccountLimits(loadBrokerTrust(m.root.layout).operator, rec.jwt, { conn: maxConns }).jwt };
}

const limits = (space: string, change: { from: string; to: string }): MutationIntent => ({ op: "limits", verb: "space limits", limitsChange: { space, ...change } });

describe("the render's record view", () => {
  it("takes the records the claim does not write from the view (same revision): the view is what renders", async () => {
    s = memorySaga();
    await runMutation(s.env, add("beta"));
    const { decided, view } = await viewNow(s);
    // A view record that differs from disk (a valid re-signed JWT never written): if it renders, the view was used.
    const marker = resigned(s, "beta", 7).to;
    const doctored: DiskView = { ...view, records: view.records.map((r) => (r.name === "beta" ? { ...r, jwt: marker } : r)) };
    await runMutation(s.env, add("gamma"), decided, doctored);
    expect(confText(s)).toContain(marker);
  });

  it("reads the record its own claim re-signs from disk: a `space limits` through the view renders the new JWT", async () => {
    s = memorySaga();
    await runMutation(s.env, add("beta"));
    const { decided, view } = await viewNow(s);
    const change = resigned(s, "beta", 5);
    const r = await runMutation(s.env, limits("beta", change), decided, view);
    expect(r.outcome).toBe("committed");
    expect(confText(s)).toContain(change.to);
    expect(confText(s)).not.toContain(change.from);
    expectConverged(s, ["beta", "default"], 3);
  });

  it("ignores a view read before the revision moved: a record another claim re-signed since renders from disk", async () => {
    s = memorySaga();
    await runMutation(s.env, add("beta"));
    const old = await viewNow(s);
    const change = resigned(s, "beta", 5);
    await runMutation(s.env, limits("beta", change)); // another writer's claim, committed after the view was read
    const decided = await decisionRead(s.env.store);
    await runMutation(s.env, add("gamma"), decided, old.view);
    expect(confText(s)).toContain(change.to);
    expect(confText(s)).not.toContain(change.from);
    expectConverged(s, ["beta", "default", "gamma"], 4);
  });

  it("positive control: with the STALE_RECORD_VIEW switch both renders carry the stale JWT", async () => {
    s = memorySaga();
    await runMutation(s.env, add("beta"));
    s.env.guards = { ...GUARDS_ON, STALE_RECORD_VIEW: true };
    const own = await viewNow(s);
    const change = resigned(s, "beta", 5);
    await runMutation(s.env, limits("beta", change), own.decided, own.view);
    expect(confText(s)).toContain(change.from); // its own re-sign is not what the broker got
    const old = await viewNow(s); // the view still holds the first JWT: the record on disk has the second
    const again = resigned(s, "beta", 9);
    await runMutation(s.env, limits("beta", again));
    await runMutation(s.env, add("gamma"), await decisionRead(s.env.store), { ...old.view, records: own.view.records });
    expect(confText(s)).toContain(change.from);
    expect(confText(s)).not.toContain(again.to);
  });
});
