import { existsSync, lstatSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { selfOwner } from "../src/lock/process-identity.js";
import { quiescedCount, recoverQuiesce, resignRevocations } from "../src/backup/quiesce.js";
import { loadSpaceAccount } from "../src/root/account-store.js";
import { readJournal, writeJournal, type QuiesceEntry } from "../src/journal/journal.js";
import { runMutation } from "../src/saga/mutation.js";
import { memorySaga, type MemorySaga } from "../src/testing/index.js";
import { revokeAllBefore } from "../src/trust/account.js";
import { add, confText, crashAt, record } from "./saga-memory-helpers.js";

// The quiesce and the lift of an online backup through the saga's one-account re-sign (op "limits"; docs/resume.md).
let s: MemorySaga;
afterEach(() => s?.close());

const jwtOf = (space: string): string => loadSpaceAccount(s.root.layout, space)?.jwt ?? "";

function entryFor(out: string, stage: QuiesceEntry["stage"] = "snapshotting"): QuiesceEntry {
  return { op: "quiesce", space: "beta", purpose: "backup", out, attemptId: "a1", owner: selfOwner(), startedAt: new Date().toISOString(), stage };
}

describe("quiesce and lift through the saga", () => {
  it("the quiesce commits a render that preloads the revoking JWT; the lift one without it; a repeat is a no-op", async () => {
    s = memorySaga();
    await runMutation(s.env, add("beta"));
    const g = record(s).generation;
    expect(await resignRevocations(s.env, "beta", 1_800_000_000, "space backup (quiesce)")).toEqual({ changed: true });
    expect(revokeAllBefore(jwtOf("beta"))).toBe(1_800_000_000);
    expect(confText(s)).toContain(jwtOf("beta"));
    expect(record(s)).toMatchObject({ generation: g + 1, appliedGeneration: g + 1, pending: null });
    expect(await resignRevocations(s.env, "beta", 1_800_000_000, "space backup (quiesce)")).toEqual({ changed: false });
    expect(await resignRevocations(s.env, "beta", undefined, "space backup (lift)")).toEqual({ changed: true });
    expect(revokeAllBefore(jwtOf("beta"))).toBeUndefined();
    expect(confText(s)).toContain(jwtOf("beta"));
    expect(record(s).generation).toBe(g + 2);
  });

  it("a lift cut after its stage is settled first, then done; the recovery removes only the partial artifact it can prove ours", async () => {
    s = memorySaga();
    await runMutation(s.env, add("beta"));
    await resignRevocations(s.env, "beta", 1_800_000_000, "space backup (quiesce)");
    await crashAt("after-stage", () => resignRevocations(s.env, "beta", undefined, "space backup (lift)"));
    expect(record(s).pending).not.toBeNull();

    const out = join(s.root.layout.root, "beta.partial");
    mkdirSync(out);
    writeFileSync(join(out, "half.snap"), "x");
    const st = lstatSync(out);
    writeJournal(s.root.layout, s.lock, { ...entryFor(out), outIno: { dev: st.dev, ino: st.ino } });
    const r = await recoverQuiesce(s.env, readJournal(s.root.layout) as QuiesceEntry, "up");
    expect(r).toMatchObject({ space: "beta", artifact: "removed" });
    expect(existsSync(out)).toBe(false);
    expect(revokeAllBefore(jwtOf("beta"))).toBeUndefined();
    expect(record(s).pending).toBeNull();
    expect(readJournal(s.root.layout)).toBeUndefined();
  });

  it("keeps a complete artifact, and a directory whose inode the entry does not name", async () => {
    s = memorySaga();
    await runMutation(s.env, add("beta"));
    await resignRevocations(s.env, "beta", 1_800_000_000, "space backup (quiesce)");
    const complete = join(s.root.layout.root, "beta.complete");
    mkdirSync(complete);
    writeFileSync(join(complete, "manifest.json"), "{}");
    writeJournal(s.root.layout, s.lock, entryFor(complete, "published"));
    expect((await recoverQuiesce(s.env, readJournal(s.root.layout) as QuiesceEntry, "up")).artifact).toBe("complete");
    expect(readFileSync(join(complete, "manifest.json"), "utf8")).toBe("{}");

    await resignRevocations(s.env, "beta", 1_800_000_000, "space backup (quiesce)");
    const foreign = join(s.root.layout.root, "beta.foreign");
    mkdirSync(foreign);
    writeJournal(s.root.layout, s.lock, entryFor(foreign)); // no outIno: never proven ours
    expect((await recoverQuiesce(s.env, readJournal(s.root.layout) as QuiesceEntry, "up")).artifact).toBe("not-ours");
    expect(existsSync(foreign)).toBe(true);
    expect(revokeAllBefore(jwtOf("beta"))).toBeUndefined();
  });
});

describe("quiescedCount (the worker's cotal_quiesced_tenants)", () => {
  it("counts a revoking JWT and a journaled quiesce once each, and nothing after the lift", async () => {
    s = memorySaga();
    await runMutation(s.env, add("beta"));
    await runMutation(s.env, add("gamma"));
    expect(quiescedCount(s.root.layout)).toBe(0);
    await resignRevocations(s.env, "beta", 1_800_000_000, "space backup (quiesce)");
    expect(quiescedCount(s.root.layout)).toBe(1);
    writeJournal(s.root.layout, s.env.lock, entryFor(join(s.root.layout.root, "..", "beta.bak"))); // the same tenant: still one
    expect(quiescedCount(s.root.layout)).toBe(1);
    await resignRevocations(s.env, "gamma", 1_800_000_000, "space backup (quiesce)");
    expect(quiescedCount(s.root.layout)).toBe(2);
    await resignRevocations(s.env, "beta", undefined, "space backup (lift)");
    await resignRevocations(s.env, "gamma", undefined, "space backup (lift)");
    expect(quiescedCount(s.root.layout)).toBe(1); // the entry still stands until its lift clears it
  });
});
