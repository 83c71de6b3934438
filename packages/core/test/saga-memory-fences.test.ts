/**
 * The saga's fences against the in-memory store: the CAS (a concurrent writer between the decision
 * read and the claim), the writer lease at the rename, the reload proof, the commit digest, and the
 * store's own lost replies. Each asserts which refusal fired and what the record and disk hold.
 */
import { appendFileSync, existsSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { afterEach, describe, expect, it } from "vitest";
import { LEASE_TTL_MS } from "../src/inventory/lease.js";
import { decisionRead, runMutation } from "../src/saga/mutation.js";
import { digestOfServerConf } from "../src/saga/digest.js";
import { FakeReloader, ManualClock, MemoryInventoryStore, createTempRoot, memorySaga, type MemorySaga, type StoreFault } from "../src/testing/index.js";
import { add, confText, expectCode, expectConverged, hasRecord, record, resumeOnly, stagedFiles } from "./saga-memory-helpers.js";
import { GUARDS_ON } from "../src/guards.js";

let s: MemorySaga;
afterEach(() => {
  s?.close();
});

/** A concurrent writer that committed a generation of its own (same list, so disk stays the committed bytes). */
const committedElsewhere: StoreFault = { kind: "concurrent-write", mutate: (r) => ({ ...r, generation: r.generation + 1, appliedGeneration: r.generation + 1 }) };

describe("the CAS: a concurrent writer between the decision read and the claim", () => {
  it("moves the record after the decision read: conflict, one re-read and re-decide, then success", async () => {
    s = memorySaga();
    const decided = await decisionRead(s.env.store);
    s.store.on("read", 2, committedElsewhere); // the re-read under the lease sees a moved revision
    const notices: string[] = [];
    const r = await runMutation({ ...s.env, onNotice: (m) => notices.push(m) }, add("beta"), decided);
    expect(r).toMatchObject({ outcome: "committed", attempts: 2, conflicts: 1, generation: 3 });
    expect(notices.some((n) => n.startsWith("conflict:"))).toBe(true);
    expectConverged(s, ["beta", "default"], 3);
  });

  it("keeps moving it: bounded retry gives up with conflict after maxAttempts, having claimed nothing", async () => {
    s = memorySaga();
    s.store.on("read", (n) => n % 2 === 0, committedElsewhere);
    const err = await expectCode(runMutation({ ...s.env, maxAttempts: 3 }, add("beta")), "conflict");
    expect(err.message).toContain("gave up after 3 attempts");
    expect(s.store.writes.filter((w) => w.op !== "concurrent")).toEqual([]);
    expect(record(s).pending).toBeNull();
    expect(hasRecord(s, "beta")).toBe(false);
    expect(confText(s)).toBe(s.root.conf.text);
  });

  it("the claim CAS itself loses: conflict, re-decided, then committed", async () => {
    s = memorySaga();
    s.store.on("update", 1, { kind: "cas-loss" });
    const r = await runMutation(s.env, add("beta"));
    expect(r).toMatchObject({ outcome: "committed", attempts: 2, conflicts: 1, generation: 2 });
    expectConverged(s, ["beta", "default"], 2);
  });

  it("a writer moves the record between the re-read and the claim: the claim CAS refuses (no lost update)", async () => {
    s = memorySaga();
    s.store.on("update", 1, committedElsewhere);
    const r = await runMutation(s.env, add("beta"));
    expect(r).toMatchObject({ attempts: 2, conflicts: 1, generation: 3 });
    expectConverged(s, ["beta", "default"], 3);
  });

  it("reconcile's printed revision moved: conflict, never retried", async () => {
    s = memorySaga();
    const printed = record(s);
    s.store.put({ ...printed, generation: 2, appliedGeneration: 2 });
    await expectCode(runMutation(s.env, { op: "reconcile", target: ["default"], expectRevision: 1, verb: "broker reconcile --adopt-disk" }), "conflict");
    expect(s.store.calls("acquireLease")).toBe(1);
    expect(s.store.writes.filter((w) => w.op === "update")).toEqual([]);
  });

  it("ablation DISABLE_CAS: the same concurrent writer's commit is overwritten (the lost update the CAS prevents)", async () => {
    s = memorySaga();
    s.env.guards = { ...GUARDS_ON, DISABLE_CAS: true };
    s.store.on("read", 2, committedElsewhere);
    const r = await runMutation(s.env, add("beta"), await decisionRead(s.env.store));
    expect(r.conflicts).toBe(0);
    expect(record(s).generation).toBe(2); // generation 2 was committed twice: the other writer's is lost
  });
});

describe("the lease fence at the rename", () => {
  function expiringSaga(): { clock: ManualClock; store: MemoryInventoryStore } {
    const clock = new ManualClock();
    const store = new MemoryInventoryStore({ clock });
    // The fence's re-check is the first checkLease of a fresh mutation: the TTL ran out just before it, and another writer took the lease.
    store.on("checkLease", 1, async () => {
      clock.advance(LEASE_TTL_MS + 1);
      await store.acquireLease("root_memory", { pid: 424242, host: hostname(), verb: "space add (other)" });
    });
    return { clock, store };
  }

  it("lease expired before the rename: lease-lost, nothing renamed, staged file gone, claim cleared", async () => {
    const { store } = expiringSaga();
    s = memorySaga({ store });
    await expectCode(runMutation(s.env, add("beta")), "lease-lost");
    expect(confText(s)).toBe(s.root.conf.text);
    expect(stagedFiles(s)).toEqual([]);
    expect(record(s)).toMatchObject({ generation: 1, appliedGeneration: 1, pending: null });
    expect(existsSync(s.root.layout.accountFile("beta"))).toBe(false); // what the aborted claim minted is gone: no disk-only record
    expect(s.reloader?.calls).toBe(0);
    expect(store.peekLease("root_memory")?.verb).toBe("space add (other)"); // the new holder's lease is not released by the loser
  });

  it("ablation DISABLE_FENCE: the writer that lost its lease renames anyway", async () => {
    const { store } = expiringSaga();
    s = memorySaga({ store });
    s.env.guards = { ...GUARDS_ON, DISABLE_FENCE: true };
    await runMutation(s.env, add("beta")).catch(() => undefined);
    expect(confText(s)).not.toBe(s.root.conf.text);
  });

  it("a live holder's lease blocks the saga: lease-held names it, nothing is read past it", async () => {
    s = memorySaga();
    await s.store.acquireLease("root_memory", { pid: process.pid, host: hostname(), verb: "space rm other" });
    const err = await expectCode(runMutation(s.env, add("beta")), "lease-held");
    expect(err.message).toContain("space rm other");
    expect(record(s).pending).toBeNull();
  });
});

describe("the reload proof (step 7)", () => {
  for (const verdict of [{ failed: "[ERR] Failed to reload server configuration: nope" }, "unproven"] as const) {
    const what = typeof verdict === "string" ? verdict : "failed";
    it(`a ${what} reload: fenced rollback to the previous bytes, re-proven, claim and minted record undone`, async () => {
      const root = createTempRoot();
      const reloader = new FakeReloader(root.layout, [verdict, "reloaded"]);
      s = memorySaga({ root, reloader });
      const err = await expectCode(runMutation(s.env, add("beta")), "reload-unproven");
      expect(err.message).toContain("the previous config was restored and proven");
      expectConverged(s, ["default"], 1);
      expect(confText(s)).toBe(root.conf.text);
      expect(hasRecord(s, "beta")).toBe(false);
      expect(reloader.loaded).toHaveLength(2);
      expect(reloader.loaded[1]).toBe(root.conf.digest);
      expect(reloader.loaded[0]).not.toBe(root.conf.digest);
    });
  }

  it("a failed reload after the lease was lost: nothing renamed back, the claim stays, and the next writer completes it forward", async () => {
    const clock = new ManualClock();
    const store = new MemoryInventoryStore({ clock });
    const root = createTempRoot();
    const reloader = new FakeReloader(root.layout, [{ failed: "[ERR] Failed to reload server configuration" }]);
    reloader.onReload = () => clock.advance(LEASE_TTL_MS + 1);
    s = memorySaga({ root, store, reloader });
    await expectCode(runMutation(s.env, add("beta")), "reload-unproven");
    const promoted = record(s).pending?.stagedDigest;
    expect(digestOfServerConf(root.layout)).toBe(promoted);
    expect(reloader.calls).toBe(1);

    const r = await runMutation(s.env, resumeOnly); // the broker now accepts it
    expect(r.resumed).toBe("complete-forward");
    expectConverged(s, ["beta", "default"], 2);
  });

  it("a failed reload over a hand-edited server.conf: the edited bytes are not renamed back; the next writer restores the committed ones", async () => {
    const root = createTempRoot();
    appendFileSync(root.layout.serverConf, "# an operator's edit, never proven\n");
    const reloader = new FakeReloader(root.layout, [{ failed: "[ERR] Failed to reload server configuration" }, { failed: "[ERR] Failed to reload server configuration" }, "reloaded"]);
    s = memorySaga({ root, reloader });
    const err = await expectCode(runMutation(s.env, add("beta")), "reload-unproven");
    expect(err.message).toContain("not the proven one");
    expect(confText(s)).not.toContain("an operator's edit"); // the promoted config stays; the edit is not restored
    const r = await runMutation(s.env, resumeOnly); // row 4a: rejected again, so the committed list is re-rendered
    expect(r.resumed).toBe("complete-forward");
    expect(confText(s)).toBe(root.conf.text);
    expectConverged(s, ["default"], 1);
  });

  it("ablation PROOF_WITHOUT_LOG: an unproven reload is recorded as proven and committed", async () => {
    const root = createTempRoot();
    s = memorySaga({ root, reloader: new FakeReloader(root.layout, ["unproven"]) });
    s.env.guards = { ...GUARDS_ON, PROOF_WITHOUT_LOG: true };
    const r = await runMutation(s.env, add("beta"));
    expect(r.outcome).toBe("committed");
  });
});

describe("the commit digest (step 8)", () => {
  function outsideWriterAfterProof(): MemorySaga {
    const root = createTempRoot();
    const reloader = new FakeReloader(root.layout);
    reloader.onReload = () => writeFileSync(root.layout.serverConf, `${root.conf.text}# promoted by someone else\n`);
    return memorySaga({ root, reloader });
  }

  it("server.conf changed between proof and commit: digest-mismatch, the proven claim stays uncommitted", async () => {
    s = outsideWriterAfterProof();
    const err = await expectCode(runMutation(s.env, add("beta")), "digest-mismatch");
    expect(err.next).toBe("cotal broker reconcile");
    expect(record(s)).toMatchObject({ generation: 1, appliedGeneration: 2, pending: { generation: 2 } });
    // and the resume table refuses it from here on: the proven bytes are gone
    await expectCode(runMutation(s.env, resumeOnly), "resume-refused");
  });

  it("ablation SKIP_COMMIT_DIGEST: the foreign bytes are committed as generation 2", async () => {
    s = outsideWriterAfterProof();
    s.env.guards = { ...GUARDS_ON, SKIP_COMMIT_DIGEST: true };
    const r = await runMutation(s.env, add("beta"));
    expect(r.outcome).toBe("committed");
    expect(record(s).configDigest).not.toBe(digestOfServerConf(s.root.layout));
  });
});

describe("lost replies from the store", () => {
  it("a lost reply settled by the read-back is invisible to the saga", async () => {
    s = memorySaga();
    for (let n = 1; n <= 4; n++) s.store.on("update", n, { kind: "lost-reply" });
    const r = await runMutation(s.env, add("beta"));
    expect(r).toMatchObject({ outcome: "committed", attempts: 1 });
    expectConverged(s, ["beta", "default"], 2);
  });

  // update #3 is the proof CAS, #4 the commit.
  for (const [n, landed, resumed] of [
    [3, true, "commit-only"],
    [3, false, "complete-forward"],
    [4, true, undefined],
    [4, false, "commit-only"],
  ] as const) {
    it(`an unreadable reply at update #${n} (write ${landed ? "landed" : "lost"}): inventory-unreachable, then the next run resumes ${resumed ?? "nothing"} and converges`, async () => {
      s = memorySaga();
      s.store.on("update", n, { kind: "lost-reply-unread", landed });
      await expectCode(runMutation(s.env, add("beta")), "inventory-unreachable");
      const r = await runMutation(s.env, resumeOnly);
      expect(r.resumed).toBe(resumed);
      expectConverged(s, ["beta", "default"], 2);
    });
  }
});
