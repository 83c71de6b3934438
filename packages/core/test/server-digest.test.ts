import { describe, expect, it } from "vitest";
import { parseInventoryRecord, reloadLineDigest, runningServerDigest, serverDigestField, type InventoryRecord, type ReloadVerdict } from "../src/internal.js";

const A = `sha256:${"a".repeat(64)}`;
const B = `sha256:${"b".repeat(64)}`;
const S = `sha256:${"c".repeat(64)}`;
const base: InventoryRecord = { generation: 2, spaces: ["alpha"], appliedGeneration: 2, configDigest: A, pending: null };

describe("the server's config_digest beside cotal's byte digest", () => {
  it("reads the digest 2.11+ append to the reload line, and none from 2.9.10's", () => {
    expect(reloadLineDigest(`[1] 2026/12/01 09:00:00.000000 [INF] Reloaded server configuration (${S})`)).toBe(S);
    expect(reloadLineDigest("[1] 2026/12/01 09:00:00.000000 [INF] Reloaded server configuration")).toBeUndefined();
    expect(reloadLineDigest("[INF] Reloaded server configuration (sha256:short)")).toBeUndefined();
  });

  it("a proven reload pairs the server digest with the bytes it ran; anything else drops the pair", () => {
    const ok: ReloadVerdict = { outcome: "reloaded", via: "request", line: "", ms: 1, serverConfigDigest: S };
    expect(serverDigestField(ok, B)).toEqual({ serverConfigDigest: { digest: S, forConfigDigest: B } });
    expect(serverDigestField({ ...ok, serverConfigDigest: undefined }, B)).toEqual({ serverConfigDigest: undefined });
    expect(serverDigestField({ outcome: "unproven", via: "request", logTail: "", ms: 1 }, B)).toEqual({ serverConfigDigest: undefined });
    expect(serverDigestField(ok, null)).toEqual({ serverConfigDigest: undefined });
    // dropped from the stored JSON, so an older pair never survives a reload that read none
    const next = { ...base, serverConfigDigest: { digest: S, forConfigDigest: A }, ...serverDigestField({ ...ok, serverConfigDigest: undefined }, B) };
    expect(JSON.parse(JSON.stringify(next))).not.toHaveProperty("serverConfigDigest");
  });

  it("describes the running config only while it was read for the recorded bytes", () => {
    expect(runningServerDigest({ ...base, serverConfigDigest: { digest: S, forConfigDigest: A } })).toBe(S);
    // e.g. a boot re-proved other bytes after the pair was written
    expect(runningServerDigest({ ...base, configDigest: B, serverConfigDigest: { digest: S, forConfigDigest: A } })).toBeUndefined();
    expect(runningServerDigest(base)).toBeUndefined();
  });

  it("the record parser accepts the pair and refuses a malformed one", () => {
    const rec = { ...base, serverConfigDigest: { digest: S, forConfigDigest: A } };
    expect(parseInventoryRecord(JSON.stringify(rec))).toEqual(rec);
    expect(parseInventoryRecord(JSON.stringify(base))).toEqual(base);
    for (const bad of [S, null, { digest: S }, { digest: "md5:x", forConfigDigest: A }, { digest: S, forConfigDigest: 3 }]) {
      expect(parseInventoryRecord(JSON.stringify({ ...base, serverConfigDigest: bad }))).toMatch(/serverConfigDigest/);
    }
  });
});
