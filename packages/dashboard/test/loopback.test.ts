import { describe, expect, it } from "vitest";
import { GUARDS_ON } from "@cotal/core/light";
import { hostHeaderAllowed, isLoopbackHost } from "../src/loopback.js";

describe("loopback hosts", () => {
  it("accepts 127.0.0.0/8, ::1 and localhost, and nothing another machine can reach", () => {
    for (const h of ["127.0.0.1", "127.1.2.3", "::1", "[::1]", "localhost", "LOCALHOST"]) expect(isLoopbackHost(h), h).toBe(true);
    for (const h of ["0.0.0.0", "::", "192.168.1.10", "10.0.0.1", "example.com", "127.0.0.1.nip.io", "localhost.example", ""]) expect(isLoopbackHost(h), h).toBe(false);
  });
});

describe("Host header check", () => {
  const names = new Set(["localhost", "127.0.0.1", "[::1]"]);

  it("answers its own names with any port, refuses other names and a missing header", () => {
    expect(hostHeaderAllowed("127.0.0.1:8090", names)).toBe(true);
    expect(hostHeaderAllowed("LocalHost:1", names)).toBe(true);
    expect(hostHeaderAllowed("[::1]:8090", names)).toBe(true);
    expect(hostHeaderAllowed("rebind.example:8090", names)).toBe(false);
    expect(hostHeaderAllowed("127.0.0.1.evil.example", names)).toBe(false);
    expect(hostHeaderAllowed(undefined, names)).toBe(false);
  });

  it("the test-only switch lets every Host through (what the ablation cell shows)", () => {
    expect(hostHeaderAllowed("rebind.example", names, { ...GUARDS_ON, DASHBOARD_ANY_HOST_HEADER: true })).toBe(true);
  });
});
