/**
 * Every row of the crash-resume table (docs/resume.md) executed through runMutation against the
 * in-memory store: each state is reached the way a crash leaves it (a failpoint at the saga step),
 * or written into the store where no cooperative crash can leave it (row 6).
 */
import { writeFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { runMutation } from "../src/saga/mutation.js";
import { digestOfServerConf } from "../src/saga/digest.js";
import { memorySaga, type MemorySaga } from "../src/testing/index.js";
import { add, confText, crashAt, expectCode, expectConverged, hasRecord, pendingClaim, record, resumeOnly, stagedFiles } from "./saga-memory-helpers.js";

let s: MemorySaga;
afterEach(() => s?.close());

describe("crash-resume table through runMutation (in memory)", () => {
  it("row 1 fresh: a clean record takes new work, proven and committed", async () => {
    s = memorySaga();
    const r = await runMutation(s.env, add("beta"));
    expect(r).toMatchObject({ outcome: "committed", generation: 2, added: ["beta"], attempts: 1, conflicts: 0, reloads: 1 });
    expect(r.resumed).toBeUndefined();
    expectConverged(s, ["beta", "default"], 2);
    expect(s.reloader?.loaded).toEqual([record(s).configDigest]);
  });

  it("row 2 rollback-unstaged: the minted record is deleted and the claim cleared; the caller's own change refuses rolled-back", async () => {
    s = memorySaga();
    await crashAt("after-materialise", () => runMutation(s.env, add("beta")));
    expect(record(s).pending).toMatchObject({ generation: 2, mints: ["beta"] });
    expect(record(s).pending?.stagedDigest).toBeUndefined();
    expect(hasRecord(s, "beta")).toBe(true);

    await expectCode(runMutation(s.env, add("gamma")), "rolled-back");
    expect(hasRecord(s, "beta")).toBe(false);
    expect(hasRecord(s, "gamma")).toBe(false);
    expect(confText(s)).toBe(s.root.conf.text);
    expect(record(s)).toMatchObject({ generation: 1, appliedGeneration: 1, pending: null, spaces: ["default"] });
    expect(s.reloader?.calls).toBe(0);
  });

  it("row 2 as `up` resumes it: the rollback is the resolution, nothing else changes", async () => {
    s = memorySaga();
    await crashAt("after-claim", () => runMutation(s.env, add("beta")));
    const r = await runMutation(s.env, resumeOnly);
    expect(r).toMatchObject({ outcome: "noop", resumed: "rollback-unstaged", generation: 1 });
    expectConverged(s, ["default"], 1);
    expect(hasRecord(s, "beta")).toBe(false);
  });

  it("row 3 rollback-staged: the staged file is unlinked and the minted record deleted", async () => {
    s = memorySaga();
    await crashAt("after-stage", () => runMutation(s.env, add("beta")));
    expect(record(s).pending?.stagedDigest).toMatch(/^sha256:/);
    expect(stagedFiles(s)).toHaveLength(1);

    const r = await runMutation(s.env, resumeOnly);
    expect(r).toMatchObject({ outcome: "noop", resumed: "rollback-staged" });
    expectConverged(s, ["default"], 1);
    expect(hasRecord(s, "beta")).toBe(false);
    expect(s.reloader?.calls).toBe(0);
  });

  it("row 4 complete-forward: the promoted bytes are reloaded, proven and committed", async () => {
    s = memorySaga();
    await crashAt("after-rename", () => runMutation(s.env, add("beta")));
    const staged = record(s).pending?.stagedDigest;
    expect(digestOfServerConf(s.root.layout)).toBe(staged);

    const r = await runMutation(s.env, resumeOnly);
    expect(r).toMatchObject({ outcome: "noop", resumed: "complete-forward", generation: 2 });
    expectConverged(s, ["beta", "default"], 2);
    expect(s.reloader?.loaded).toEqual([staged]);
  });

  it("row 4a complete-forward rejected by the broker: the committed bytes are re-rendered, renamed back, re-proven, then rolled back", async () => {
    s = memorySaga();
    await crashAt("after-rename", () => runMutation(s.env, add("beta")));
    const staged = record(s).pending?.stagedDigest;
    s.reloader?.queue({ failed: "[ERR] Failed to reload server configuration: bad account" }, "reloaded");

    // `up` resuming treats the rollback as its resolution: a noop, not a refusal.
    const r = await runMutation(s.env, resumeOnly);
    expect(r).toMatchObject({ outcome: "noop", resumed: "complete-forward", generation: 1 });
    expectConverged(s, ["default"], 1);
    expect(confText(s)).toBe(s.root.conf.text);
    expect(hasRecord(s, "beta")).toBe(false);
    expect(s.reloader?.loaded).toEqual([staged, s.root.conf.digest]);
  });

  it("row 4a for a writer with its own change: rolled-back names the rejected config", async () => {
    s = memorySaga();
    await crashAt("after-rename", () => runMutation(s.env, add("beta")));
    s.reloader?.queue({ failed: "[ERR] Failed to reload server configuration: bad account" }, "reloaded");
    const err = await expectCode(runMutation(s.env, add("gamma")), "rolled-back");
    expect(err.message).toContain("rejected the promoted config");
    expectConverged(s, ["default"], 1);
    expect(hasRecord(s, "gamma")).toBe(false);
  });

  it("row 4a where the re-load of the committed bytes is unproven too: reload-unproven, the claim stays for reconcile", async () => {
    s = memorySaga();
    await crashAt("after-rename", () => runMutation(s.env, add("beta")));
    s.reloader?.queue({ failed: "[ERR] Failed to reload server configuration" }, "unproven");
    await expectCode(runMutation(s.env, resumeOnly), "reload-unproven");
    expect(record(s).pending).toMatchObject({ generation: 2 });
    expect(confText(s)).toBe(s.root.conf.text); // the committed bytes were renamed back before the second reload
  });

  it("row 4 with an unproven reload: rollback is forbidden, the promoted bytes and the claim stay", async () => {
    s = memorySaga();
    await crashAt("after-rename", () => runMutation(s.env, add("beta")));
    const before = s.store.peek();
    const conf = confText(s);
    s.reloader?.queue("unproven");
    await expectCode(runMutation(s.env, resumeOnly), "reload-unproven");
    expect(s.store.peek()).toEqual(before);
    expect(confText(s)).toBe(conf);
    expect(hasRecord(s, "beta")).toBe(true);
  });

  it("row 5 commit-only: a proven, uncommitted generation is committed without another reload", async () => {
    s = memorySaga();
    await crashAt("after-proof", () => runMutation(s.env, add("beta")));
    expect(record(s)).toMatchObject({ generation: 1, appliedGeneration: 2 });
    const reloads = s.reloader?.calls;

    const r = await runMutation(s.env, resumeOnly);
    expect(r).toMatchObject({ resumed: "commit-only", generation: 2 });
    expectConverged(s, ["beta", "default"], 2);
    expect(s.reloader?.calls).toBe(reloads);
  });

  it("offline (no running broker): the saga stops after promotion, and an offline resume refuses until a boot proves it", async () => {
    s = memorySaga({ offline: true });
    const r = await runMutation(s.env, add("beta"));
    expect(r.outcome).toBe("promoted");
    expect(record(s)).toMatchObject({ generation: 1, appliedGeneration: 1, pending: { generation: 2 } });
    expect(digestOfServerConf(s.root.layout)).toBe(record(s).pending?.stagedDigest);
    await expectCode(runMutation(s.env, resumeOnly), "resume-refused");
  });
});

describe("row 6 refuse: a state no cooperative crash leaves changes nothing", () => {
  const HAND_EDIT = "\n# edited by hand\n";
  const cases: { name: string; setup: (s: MemorySaga) => void }[] = [
    { name: "no pending, yet applied != generation", setup: (s) => s.store.put({ ...s.root.record, appliedGeneration: 0 }) },
    { name: "pending does not claim g+1", setup: (s) => s.store.put({ ...s.root.record, pending: pendingClaim({ generation: 3 }) }) },
    { name: "applied is neither g nor g+1", setup: (s) => s.store.put({ ...s.root.record, generation: 3, appliedGeneration: 1, pending: pendingClaim({ generation: 4 }) }) },
    {
      name: "proven generation whose bytes are gone",
      setup: (s) => {
        s.store.put({ ...s.root.record, appliedGeneration: 2, configDigest: `sha256:${"e".repeat(64)}`, pending: pendingClaim({ stagedDigest: `sha256:${"e".repeat(64)}` }) });
      },
    },
    {
      name: "server.conf is neither committed nor staged (staged claim)",
      setup: (s) => {
        s.store.put({ ...s.root.record, pending: pendingClaim({ stagedDigest: `sha256:${"f".repeat(64)}` }) });
        writeFileSync(s.root.layout.serverConf, s.root.conf.text + HAND_EDIT);
      },
    },
    {
      name: "server.conf is not the committed config and nothing was staged",
      setup: (s) => {
        s.store.put({ ...s.root.record, pending: pendingClaim() });
        writeFileSync(s.root.layout.serverConf, s.root.conf.text + HAND_EDIT);
      },
    },
  ];
  for (const c of cases) {
    it(c.name, async () => {
      s = memorySaga({ seed: false });
      c.setup(s);
      const before = s.store.peek();
      const conf = confText(s);
      const err = await expectCode(runMutation(s.env, add("beta")), "resume-refused");
      expect(err.next).toContain("cotal broker reconcile");
      expect(s.store.peek()).toEqual(before);
      expect(confText(s)).toBe(conf);
      expect(hasRecord(s, "beta")).toBe(false);
      expect(stagedFiles(s)).toEqual([]);
      expect(s.reloader?.calls).toBe(0);
    });
  }
});
