import { afterEach, describe, expect, it } from "vitest";
import { renderNode } from "../src/broker/render-root.js";
import { clusterOf, newClusterSettings, nodeHost, routesFor, validNodeHost } from "../src/root/cluster-settings.js";
import { RootLayout } from "../src/root/layout.js";
import { loadSettings, saveSettings } from "../src/root/settings.js";
import { isLocalHost } from "../src/broker/runtime.js";
import { validNodeHosts } from "../src/ops/boot-cluster.js";
import { createTempRoot } from "../src/testing/index.js";
import { refusalOf } from "./fixtures/records.js";

// Per-node hosts (docs/cluster.md "A cluster across hosts"): settings, routes, the render and the
// rule that `up` starts only the nodes on its own host.

const HOSTS = ["10.99.0.1", "10.99.0.2", "10.99.0.3"];

describe("a node's host in the cluster settings", () => {
  const layout = new RootLayout("/r");

  it("is kept per node; absent, the root's host as before", () => {
    const c = newClusterSettings("c", [1, 2, 3], [4, 5, 6], HOSTS);
    expect(c.nodes.map((n) => n.host)).toEqual(HOSTS);
    expect(clusterOf(layout, { cluster: c })).toEqual(c);
    expect(newClusterSettings("c", [1, 2, 3], [4, 5, 6]).nodes.every((n) => !("host" in n))).toBe(true);
    expect(nodeHost({}, "127.0.0.1")).toBe("127.0.0.1");
    expect(nodeHost({ host: "10.99.0.2" }, "127.0.0.1")).toBe("10.99.0.2");
  });

  it("routes dial each other node on its own host", () => {
    const c = newClusterSettings("c", [1, 2, 3], [4, 5, 6], HOSTS);
    expect(routesFor(c, "127.0.0.1", "c-n2")).toEqual(["nats-route://10.99.0.1:4", "nats-route://10.99.0.3:6"]);
  });

  it("refuses a host that is not an IPv4 address or a DNS name", () => {
    const c = newClusterSettings("c", [1, 2, 3], [4, 5, 6], HOSTS);
    for (const host of ["10.99.0.256", "::1", "Host", "a b", 'h"x', "", 7, "-h"]) {
      const bad = { ...c, nodes: [...c.nodes.slice(0, 2), { ...c.nodes[2], host }] };
      expect(refusalOf(() => clusterOf(layout, { cluster: bad })).code, String(host)).toBe("corrupt-record");
    }
    expect(["10.0.0.1", "node-3.example.org", "localhost"].every(validNodeHost)).toBe(true);
  });
});

describe("--node-hosts and the local rule", () => {
  it("needs a new cluster root and one valid host per node", () => {
    expect(validNodeHosts(undefined, 3)).toBeUndefined();
    expect(validNodeHosts(HOSTS, 3)).toEqual(HOSTS);
    expect(refusalOf(() => validNodeHosts(HOSTS, undefined)).code).toBe("invalid-argument");
    expect(refusalOf(() => validNodeHosts(HOSTS.slice(0, 2), 3)).message).toContain("names 2 hosts for a 3-node cluster");
    expect(refusalOf(() => validNodeHosts(["10.0.0.1", "10.0.0.2", "bad host"], 3)).message).toContain('"bad host"');
  });

  it("up starts a node only when its host is this machine's", () => {
    expect(isLocalHost("127.0.0.1", [])).toBe(true);
    expect(isLocalHost("localhost", [])).toBe(true);
    expect(isLocalHost("0.0.0.0", [])).toBe(true); // a wildcard listener is this machine
    expect(isLocalHost("::1", [])).toBe(true);
    expect(isLocalHost("10.99.0.1", ["127.0.0.1", "10.99.0.1"])).toBe(true);
    expect(isLocalHost("10.99.0.2", ["127.0.0.1", "10.99.0.1"])).toBe(false);
  });
});

describe("a node's render on its host", () => {
  const roots: { remove(): void }[] = [];
  afterEach(() => roots.splice(0).forEach((r) => r.remove()));

  it("listens on its own host, its routes on the others' hosts", () => {
    const root = createTempRoot();
    roots.push(root);
    const s = loadSettings(root.layout);
    if (!s) throw new Error("no settings");
    const cluster = newClusterSettings("ch", [14001, 14002, 14003], [15001, 15002, 15003], HOSTS);
    saveSettings(root.layout, { ...s, cluster });
    const text = renderNode(root.layout, "ch-n2", [], { maintenance: true }).text;
    expect(text).toContain('listen: "10.99.0.2:14002"');
    expect(text).toContain('listen: "10.99.0.2:15002"');
    expect(text).toContain('"nats-route://10.99.0.1:15001"');
    expect(text).toContain('"nats-route://10.99.0.3:15003"');
    expect(text).not.toContain("127.0.0.1");
  });
});
