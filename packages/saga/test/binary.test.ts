import { describe, expect, it } from "vitest";
import { parseServerVersion, serverCapabilities, versionAtLeast } from "../src/index.js";

describe("server version gates", () => {
  it("parses nats-server --version output", () => {
    expect(parseServerVersion("nats-server: v2.9.10\n")).toMatchObject({ major: 2, minor: 9, patch: 10, raw: "2.9.10" });
  });
  it("gates sync_interval to 2.10+", () => {
    expect(serverCapabilities(parseServerVersion("v2.9.10")).syncAlways).toBe(false);
    expect(serverCapabilities(parseServerVersion("v2.10.0")).syncAlways).toBe(true);
    expect(serverCapabilities(parseServerVersion("v2.14.5")).syncAlways).toBe(true);
    expect(versionAtLeast(parseServerVersion("v3.0.0"), "2.10.0")).toBe(true);
    expect(versionAtLeast(parseServerVersion("v2.9.99"), "2.10.0")).toBe(false);
  });
});
