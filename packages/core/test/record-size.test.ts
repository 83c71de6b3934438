import { describe, expect, it } from "vitest";
import { CLAIM_GROWTH, PUT_OVERHEAD, recordWriteBytes } from "../src/inventory/record-size.js";
import type { InventoryRecord } from "../src/inventory/record.js";
import { createAccountTrust, createBrokerTrust, RootLayout, serverConfig, type RenderOptions } from "../src/internal.js";
import { DEFAULT_MAX_PAYLOAD, maxPayloadOf, type RootSettings } from "../src/root/settings.js";
import { D, pending, refusalOf } from "./fixtures/records.js";

const enc = (r: InventoryRecord): number => new TextEncoder().encode(JSON.stringify(r)).length;

describe("inventory record size guard", () => {
  it("charges a claim the room its staged, proven and committed successors need", () => {
    const names = Array.from({ length: 2000 }, (_, i) => `space-${String(i).padStart(5, "0")}-with-a-longer-name`);
    const base: InventoryRecord = { generation: 7, spaces: names.slice(0, 1000), appliedGeneration: 7, configDigest: null, pending: null };
    const claim: InventoryRecord = { ...base, pending: pending({ adds: names.slice(1000), mints: names.slice(1000) }) };
    const staged: InventoryRecord = { ...claim, pending: { ...claim.pending!, stagedDigest: D("b") } };
    const proven: InventoryRecord = { ...staged, appliedGeneration: 8, configDigest: D("b"), serverConfigDigest: { digest: D("c"), forConfigDigest: D("b") } };
    const committed: InventoryRecord = { generation: 8, spaces: names, appliedGeneration: 8, configDigest: D("b"), pending: null };
    const claimNeeds = recordWriteBytes(claim, enc(claim));
    expect(claimNeeds).toBe(enc(claim) + PUT_OVERHEAD + CLAIM_GROWTH);
    for (const later of [staged, proven, committed]) {
      expect(recordWriteBytes(later, enc(later))).toBe(enc(later) + PUT_OVERHEAD); // no claim room once staged
      expect(recordWriteBytes(later, enc(later))).toBeLessThanOrEqual(claimNeeds);
    }
    expect(recordWriteBytes(base, enc(base))).toBe(enc(base) + PUT_OVERHEAD);
  });

  it("renders max_payload, and refuses one nats-server would not start with", () => {
    const broker = createBrokerTrust({ retainSystemSigningSeed: false });
    const authority = createAccountTrust(broker.operator, "authority", { kind: "authority" });
    const alpha = createAccountTrust(broker.operator, "alpha", { kind: "space" });
    const opts: RenderOptions = { host: "127.0.0.1", port: 4222, serverName: "t", storeDir: "/s", authority };
    const text = serverConfig(broker, [alpha], { ...opts, maxPayload: DEFAULT_MAX_PAYLOAD });
    expect(text.split("\n").slice(2, 4)).toEqual(['listen: "127.0.0.1:4222"', "max_payload: 8388608"]);
    expect(serverConfig(broker, [alpha], opts)).not.toContain("max_payload");
    for (const bad of [0, -1, 1.5, 64 * 1024 ** 2 + 1]) expect(refusalOf(() => serverConfig(broker, [alpha], { ...opts, maxPayload: bad })).code).toBe("render-refused");
  });

  it("takes max_payload from settings.json, 8 MiB by default, and refuses a value out of range", () => {
    const layout = new RootLayout("/tmp/cotal-unit-root");
    const s: RootSettings = { format: "cotal.settings/1", host: "127.0.0.1", port: 4222, serverName: "t", createdAt: "t" };
    expect(maxPayloadOf(layout, s)).toBe(8 * 1024 ** 2);
    expect(maxPayloadOf(layout, { ...s, maxPayload: 65536 })).toBe(65536);
    for (const bad of [100, 64 * 1024 ** 2 + 1, 1e3 + 0.5]) {
      const err = refusalOf(() => maxPayloadOf(layout, { ...s, maxPayload: bad }));
      expect(err.code).toBe("corrupt-record");
      expect(err.next).toContain("maxPayload");
    }
  });
});
