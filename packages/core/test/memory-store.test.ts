/** The in-memory store keeps the real store's contract (inventory/authority-store.ts), or the saga tests prove nothing. */
import { describe, expect, it } from "vitest";
import { isCotalError } from "../src/errors.js";
import { LEASE_TTL_MS } from "../src/inventory/lease.js";
import { seedRecord } from "../src/inventory/record.js";
import { ManualClock, MemoryInventoryStore } from "../src/testing/index.js";

const rec = seedRecord(["default"], `sha256:${"a".repeat(64)}`, true);
const holder = (verb: string) => ({ pid: process.pid, host: "h", verb });
const code = (p: Promise<unknown>) => p.then(() => "ok", (e: unknown) => (isCotalError(e) ? e.code : String(e)));

describe("MemoryInventoryStore", () => {
  it("create is create-only: a second seed is a conflict and changes nothing", async () => {
    const s = new MemoryInventoryStore();
    expect(await s.create(rec)).toBe(1);
    expect(await code(s.create({ ...rec, generation: 2, appliedGeneration: 2 }))).toBe("conflict");
    expect((await s.read())?.record.generation).toBe(1);
  });

  it("update is a CAS at the revision read: a stale revision is a conflict, a bad one invalid-argument, an unparsable record refused", async () => {
    const s = new MemoryInventoryStore();
    await s.create(rec);
    expect(await s.update({ ...rec, generation: 2, appliedGeneration: 2 }, 1)).toBe(2);
    expect(await code(s.update(rec, 1))).toBe("conflict");
    expect(await code(s.update(rec, 0))).toBe("invalid-argument");
    expect(await code(s.update({ ...rec, spaces: ["Not A Name"] }, 2))).toBe("invalid-argument");
    expect((await s.read())?.revision).toBe(2);
  });

  it("a read is a copy: mutating it never changes the store", async () => {
    const s = new MemoryInventoryStore();
    await s.create(rec);
    const r = await s.read();
    r?.record.spaces.push("beta");
    expect((await s.read())?.record.spaces).toEqual(["default"]);
  });

  it("the lease: held refuses naming the holder, expires by the clock, a dead holder is taken over, renew after expiry is lease-lost", async () => {
    const clock = new ManualClock();
    const s = new MemoryInventoryStore({ clock });
    const a = await s.acquireLease("k", holder("a"));
    const held = await s.acquireLease("k", holder("b")).catch((e: unknown) => e);
    expect(isCotalError(held, "lease-held") && held.message).toContain("(a)");
    expect(await s.checkLease(a)).toBe(true);
    const renewed = await s.renewLease(a);
    clock.advance(LEASE_TTL_MS);
    expect(await s.checkLease(renewed)).toBe(false);
    expect(await code(s.renewLease(renewed))).toBe("lease-lost");
    const b = await s.acquireLease("k", holder("b"));
    const c = await s.acquireLease("k", holder("c"), (h) => h.verb === "b");
    expect(await s.checkLease(b)).toBe(false);
    await s.releaseLease(b); // not ours any more: left alone
    expect(s.peekLease("k")?.verb).toBe("c");
    await s.releaseLease(c);
    expect(s.peekLease("k")).toBeUndefined();
  });

  it("faults fire at the chosen call only", async () => {
    const s = new MemoryInventoryStore();
    await s.create(rec);
    s.on("update", 2, { kind: "cas-loss" }).on("update", 3, { kind: "lost-reply-unread", landed: true });
    expect(await s.update(rec, 1)).toBe(2);
    expect(await code(s.update(rec, 2))).toBe("conflict");
    expect(await code(s.update(rec, 2))).toBe("inventory-unreachable");
    expect(s.peek()?.revision).toBe(3); // it landed anyway
    expect(s.calls("update")).toBe(3);
  });
});
