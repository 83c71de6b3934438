import { describe, expect, it } from "vitest";
import { FEATURE_SINCE, parseServerVersion, serverFeatures, versionAtLeast } from "../src/internal.js";

describe("server version parsing", () => {
  it("reads nats-server --version output and bare versions", () => {
    expect(parseServerVersion("nats-server: v2.9.10\n")).toEqual({ major: 2, minor: 9, patch: 10, raw: "2.9.10" });
    expect(parseServerVersion("2.15.0-RC.1")).toEqual({ major: 2, minor: 15, patch: 0, prerelease: "RC.1", raw: "2.15.0-RC.1" });
  });
  it("refuses text without a version, typed", () => {
    expect(() => parseServerVersion("nats-server: development")).toThrow(expect.objectContaining({ code: "nats-server-missing" }));
  });
  it("orders versions numerically, a pre-release below its release", () => {
    expect(versionAtLeast(parseServerVersion("v3.0.0"), "2.10.0")).toBe(true);
    expect(versionAtLeast(parseServerVersion("v2.9.99"), "2.10.0")).toBe(false);
    expect(versionAtLeast(parseServerVersion("v2.10.0"), "2.9.10")).toBe(true);
    expect(versionAtLeast(parseServerVersion("2.14.8-RC.1"), "2.14.8")).toBe(false);
    expect(versionAtLeast(parseServerVersion("2.14.8-RC.2"), "2.14.8-RC.1")).toBe(true);
    expect(versionAtLeast(parseServerVersion("2.14.8"), "2.14.8-RC.1")).toBe(true);
  });
});

describe("serverFeatures: the one home of the version gates", () => {
  const row = (v: string) => {
    const f = serverFeatures(v);
    return [f.syncAlways, f.reloadRequest, f.configDigest, f.reloadKeepsJwtClients];
  };
  it.each([
    // version     sync   RELOAD digest  keeps-jwt-clients (nats-server PR #8609)
    ["2.9.10", [false, false, false, false]],
    ["2.9.25", [false, false, false, false]],
    ["2.10.0", [true, true, false, false]],
    ["2.10.29", [true, true, false, false]],
    ["2.11.0", [true, true, true, false]],
    ["2.12.15", [true, true, true, false]],
    ["2.14.7", [true, true, true, false]],
    ["2.14.8-RC.1", [true, true, true, false]],
    ["2.14.8", [true, true, true, true]],
    ["2.14.10", [true, true, true, true]],
    ["2.15.0", [true, true, true, true]],
    ["2.15.3", [true, true, true, true]],
    ["3.0.0", [true, true, true, true]],
  ] as const)("%s", (v, expected) => {
    expect(row(v)).toEqual(expected);
  });
  it("JSZ stream_raft_group from 2.10.4 (the unassigned-stream check's R1 half)", () => {
    expect(["2.9.10", "2.10.3", "2.10.4", "2.15.3"].map((v) => serverFeatures(v).jszStreamGroup)).toEqual([false, false, true, true]);
  });
  it("accepts a parsed version and names it", () => {
    expect(serverFeatures(parseServerVersion("nats-server: v2.14.10")).version).toBe("2.14.10");
  });
  it("names the first release of every gate", () => {
    expect(FEATURE_SINCE).toEqual({ syncAlways: "2.10.0", reloadRequest: "2.10.0", configDigest: "2.11.0", reloadKeepsJwtClients: "2.14.8", kick: "2.10.0", jszStreamGroup: "2.10.4" });
  });
});
