import { describe, expect, it } from "vitest";
import { addsWithoutEffect } from "../src/commands/space-queue.js";

const entry = (name: string, state: string, inInventory: boolean | null) => ({ name, state, inInventory, publicKey: null, inConfig: true }) as never;

describe("addsWithoutEffect: which queued adds were lost", () => {
  it("counts a space the inventory holds as added, whatever holds it now (a quiesce, a later removal)", () => {
    const list = { spaces: [entry("a", "active", true), entry("q", "quiesced", true), entry("r", "removing", true), entry("d", "disk-only", false), entry("u", "unknown", null)] };
    expect(addsWithoutEffect(["a", "q", "r", "d", "u", "gone"], list)).toEqual(["d", "u", "gone"]);
  });
});
