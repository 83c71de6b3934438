/** Shared assertions for the in-memory saga tests: they read the record, server.conf and the files, never internals. */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { expect } from "vitest";
import { isCotalError, type CotalError, type SagaErrorCode } from "../src/errors.js";
import { FailpointError, resetFailpoints, type FailpointName } from "../src/failpoints.js";
import type { InventoryRecord, PendingMutation } from "../src/inventory/record.js";
import { digestOfServerConf } from "../src/saga/digest.js";
import type { MutationIntent } from "../src/saga/mutation.js";
import { renderList } from "../src/saga/render-list.js";
import type { MemorySaga } from "../src/testing/index.js";

export const add = (...names: string[]): MutationIntent => ({ op: names.length === 1 ? "add" : "batch", adds: names, verb: "space add" });
export const remove = (name: string): MutationIntent => ({ op: "remove", removes: [name], verb: `space rm ${name}` });
/** What `up` on a running root runs: resume whatever is pending, change nothing else. */
export const resumeOnly: MutationIntent = { op: "resume", verb: "up (resume)" };

export function stagedFiles(s: MemorySaga): string[] {
  return readdirSync(s.root.layout.root).filter((n) => /^server\.conf\.\d+\./.test(n));
}

export function hasRecord(s: MemorySaga, space: string): boolean {
  return existsSync(s.root.layout.accountFile(space));
}

export function confText(s: MemorySaga): string {
  return readFileSync(s.root.layout.serverConf, "utf8");
}

export function record(s: MemorySaga): InventoryRecord {
  const cur = s.store.peek();
  if (!cur) throw new Error("no record in the store");
  return cur.record;
}

/** Clean and committed at `generation` with exactly `spaces`: server.conf holds their render and is the proven config. */
export function expectConverged(s: MemorySaga, spaces: string[], generation: number): void {
  const r = record(s);
  expect(r.pending).toBeNull();
  expect(r.generation).toBe(generation);
  expect(r.appliedGeneration).toBe(generation);
  expect(r.spaces).toEqual([...spaces].sort());
  const rendered = renderList(s.root.layout, r.spaces);
  expect(confText(s)).toBe(rendered.text);
  expect(r.configDigest).toBe(rendered.digest);
  expect(digestOfServerConf(s.root.layout)).toBe(rendered.digest);
  expect(stagedFiles(s)).toEqual([]);
  for (const space of spaces) expect(hasRecord(s, space)).toBe(true);
}

export async function expectCode(p: Promise<unknown>, code: SagaErrorCode): Promise<CotalError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!isCotalError(err, code)) throw new Error(`expected CotalError ${code}, got ${err instanceof Error ? `${err.name} ${(err as { code?: string }).code ?? ""}: ${err.message}` : String(err)}`);
  return err;
}

/** Runs `fn` with COTAL_FAILPOINT=<step>:throw armed, and expects that failpoint to be what stopped it. */
export async function crashAt(step: FailpointName, fn: () => Promise<unknown>): Promise<void> {
  process.env.COTAL_FAILPOINT = `${step}:throw`;
  resetFailpoints();
  try {
    await expect(fn()).rejects.toBeInstanceOf(FailpointError);
  } finally {
    delete process.env.COTAL_FAILPOINT;
    resetFailpoints();
  }
}

export function pendingClaim(extra: Partial<PendingMutation> = {}): PendingMutation {
  return { generation: 2, op: "add", adds: ["beta"], removes: [], writer: "pid 1@elsewhere (space add)", leaseId: "dead-writer-lease", claimedAt: new Date(0).toISOString(), ...extra };
}
