import { mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { partialDirOf, reapDeadPartials } from "../src/backup/live-backup.js";
import { restoredMismatch } from "../src/backup/restore-streams.js";

const st = (first_seq: number, last_seq: number, messages: number, bytes = messages * 10, consumer_count = 1) => ({ first_seq, last_seq, messages, bytes, consumer_count });

describe("restoredMismatch: what a restored stream may hold", () => {
  it("a still snapshot (no grewTo) must come back exactly, field by field", () => {
    expect(restoredMismatch(st(1, 10, 10), { state: st(1, 10, 10) })).toBeUndefined();
    expect(restoredMismatch(st(1, 11, 11), { state: st(1, 10, 10) })).toMatch(/^messages is 11/);
    expect(restoredMismatch(st(1, 10, 10, 99), { state: st(1, 10, 10) })).toMatch(/^bytes is 99/);
    expect(restoredMismatch(st(2, 10, 9), { state: st(1, 10, 10) })).toMatch(/^first_seq is 2/);
    expect(restoredMismatch(st(1, 10, 10, 100, 0), { state: st(1, 10, 10) })).toMatch(/^consumer_count is 0/);
  });

  it("a live snapshot that grew holds its start state plus at most the sequences up to grewTo", () => {
    const live = { state: st(1, 10, 10), grewTo: 14 };
    for (const last of [10, 12, 14]) expect(restoredMismatch(st(1, last, last, last * 10), live), `last ${last}`).toBeUndefined();
    expect(restoredMismatch(st(1, 9, 9), live)).toMatch(/^last_seq is 9, the live snapshot holds 10 to 14/);
    expect(restoredMismatch(st(1, 15, 15, 150), live)).toMatch(/^last_seq is 15/);
    expect(restoredMismatch(st(1, 12, 13, 130), live)).toMatch(/^messages is 13, the live snapshot holds 10 plus at most 2/);
    expect(restoredMismatch(st(1, 12, 9, 90), live)).toMatch(/^messages is 9/);
    expect(restoredMismatch(st(1, 12, 12, 50), live)).toMatch(/^bytes is 50/);
    expect(restoredMismatch(st(3, 12, 10), live)).toMatch(/^first_seq is 3/);
  });

  it("an empty stream is empty however a server spells its first sequence", () => {
    expect(restoredMismatch(st(1, 0, 0), { state: st(0, 0, 0) })).toBeUndefined();
  });
});

const dirs: string[] = [];
afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));

describe("a live backup's partial directory", () => {
  it("is a hidden sibling named by pid and attempt; only dead writers' partials of that --out are reaped", () => {
    const d = mkdtempSync(join(tmpdir(), "cotal-partial-"));
    dirs.push(d);
    const out = join(d, "alpha.bak");
    expect(partialDirOf(out, 42, "a1")).toBe(join(d, ".alpha.bak.partial-42-a1"));
    for (const p of [partialDirOf(out, 42, "a1"), partialDirOf(out, 7, "b2"), partialDirOf(join(d, "other"), 42, "c3"), join(d, "alpha.bak.1")]) mkdirSync(p);
    expect(reapDeadPartials(out, (pid) => pid === 7)).toEqual([".alpha.bak.partial-42-a1"]);
    expect(readdirSync(d).sort()).toEqual([".alpha.bak.partial-7-b2", ".other.partial-42-c3", "alpha.bak.1"]);
    expect(reapDeadPartials(join(d, "missing", "x"))).toEqual([]);
  });
});
