import { describe, expect, it } from "vitest";
import { rootStateSeverity, rootVerdict, spaceSeverity } from "../src/severity.js";

describe("state colours", () => {
  it("only active is green among spaces; held ones amber; inconsistent ones and unknown words red", () => {
    expect(spaceSeverity("active")).toBe("ok");
    for (const s of ["removing", "quiesced", "pending-add", "pending-remove"]) expect(spaceSeverity(s), s).toBe("warn");
    for (const s of ["disk-only", "kv-only", "not-in-config", "excluded", "something-new"]) expect(spaceSeverity(s), s).toBe("block");
    expect(spaceSeverity("unknown")).toBe("muted");
  });

  it("only a clean root is green, a stopped one amber, every torn or refusing state red", () => {
    expect(rootStateSeverity("clean")).toBe("ok");
    expect(rootStateSeverity("stopped")).toBe("warn");
    for (const s of ["BLOCKED", "PENDING", "UNPROVEN RELOAD", "UNRESUMABLE", "divergence", "uncertain", "DEGRADED", "SILENT EVICTION"] as const) expect(rootStateSeverity(s), s).toBe("block");
  });

  it("a clean root holding a quiesced or half-removed space is not green: it counts and names them", () => {
    expect(rootVerdict("clean", [{ name: "a", state: "active" }, { name: "b", state: "quiesced" }])).toEqual({ severity: "warn", label: "clean, 1 space held", held: [{ name: "b", state: "quiesced" }] });
    expect(rootVerdict("clean", [{ name: "a", state: "disk-only" }, { name: "b", state: "removing" }]).severity).toBe("block");
    // the control: every space active (or unknown with the broker down) keeps the core's word and green
    expect(rootVerdict("clean", [{ name: "a", state: "active" }, { name: "u", state: "unknown" }])).toEqual({ severity: "ok", label: "clean", held: [] });
    expect(rootVerdict("BLOCKED", [{ name: "b", state: "removing" }])).toMatchObject({ severity: "block", label: "BLOCKED" });
  });
});
