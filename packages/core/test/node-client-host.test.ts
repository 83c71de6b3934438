import { describe, expect, it } from "vitest";
import { nodeClientHost } from "../src/broker/runtime.js";

// The cluster reloader asks each node for its INFO line on that node's own address before it reloads
// it by request (saga/cluster-reloader.ts): probing node 1's host with node 3's port finds nothing on
// hosts of their own, and the reload then fell back to a local SIGHUP (docs/cluster.md).
describe("nodeClientHost: the address a node's clients reach it on", () => {
  it("is the node's own URL host, not the root's", () => {
    expect(nodeClientHost({ url: "nats://10.99.0.3:4252" }, "10.99.0.1")).toBe("10.99.0.3");
    expect(nodeClientHost({ url: "nats://node-2.example:4222" }, "127.0.0.1")).toBe("node-2.example");
  });

  it("drops an IPv6 literal's brackets (a socket wants the bare address)", () => {
    expect(nodeClientHost({ url: "nats://[::1]:4222" }, "127.0.0.1")).toBe("::1");
  });

  it("falls back to the root's host when the URL does not parse", () => {
    expect(nodeClientHost({ url: "not a url" }, "127.0.0.1")).toBe("127.0.0.1");
  });
});
