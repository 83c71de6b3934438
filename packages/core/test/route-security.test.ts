import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createAccountTrust, createBrokerTrust, serverConfig, type RenderAccount, type RenderOptions } from "../src/internal.js";
import { renderNode } from "../src/broker/render-root.js";
import { clusterOf, newClusterSettings } from "../src/root/cluster-settings.js";
import { RootLayout } from "../src/root/layout.js";
import { loadSettings, saveSettings } from "../src/root/settings.js";
import { cotalTlsFiles, createRouteSecurity, nodeRouteSecurity, routeAuthFile, routePin, routePins, routesDir } from "../src/root/route-security.js";
import { natsConfigDigest } from "../src/render/nats-digest.js";
import { createTempRoot } from "../src/testing/index.js";
import { GUARDS_ON } from "../src/guards.js";
import { refusalOf } from "./fixtures/records.js";

// Route TLS and auth (docs/cluster.md "Route TLS and auth"): the render, the settings' validation,
// the certificates cotal makes, and the guard that drops them.

const broker = createBrokerTrust({ retainSystemSigningSeed: false });
const authority = createAccountTrust(broker.operator, "authority", { kind: "authority" });
const alpha = createAccountTrust(broker.operator, "alpha", { kind: "space" });
const space = (a: RenderAccount): RenderAccount => ({ name: a.name, publicKey: a.publicKey, jwt: a.jwt });
const opts: RenderOptions = { host: "127.0.0.1", port: 4222, serverName: "c-n1", storeDir: "/r/nodes/c-n1/store", authority };
const PW = "0123456789abcdef0123456789abcdef";
const block = {
  name: "c",
  port: 6222,
  routes: ["nats-route://127.0.0.1:6224", "nats-route://127.0.0.1:6223"],
  tls: { certFile: "/r/routes/c-n1.pem", keyFile: "/r/routes/c-n1-key.pem", caFile: "/r/routes/ca.pem" },
  auth: { user: "cotal-route", password: PW },
};

describe("a node's cluster block with route TLS and auth", () => {
  it("renders mutual TLS, the route authorization and credentialed routes, line for line", () => {
    const lines = serverConfig(broker, [space(alpha)], { ...opts, cluster: block }).split("\n");
    const at = lines.indexOf("cluster {");
    expect(lines.slice(at, at + 20)).toEqual([
      "cluster {",
      '  name: "c"',
      '  listen: "127.0.0.1:6222"',
      "  tls {",
      '    cert_file: "/r/routes/c-n1.pem"',
      '    key_file: "/r/routes/c-n1-key.pem"',
      '    ca_file: "/r/routes/ca.pem"',
      "    verify: true",
      "    timeout: 5",
      "  }",
      "  authorization {",
      '    user: "cotal-route"',
      `    password: "${PW}"`,
      "    timeout: 5",
      "  }",
      "  routes: [",
      `    "nats-route://cotal-route:${PW}@127.0.0.1:6223"`,
      `    "nats-route://cotal-route:${PW}@127.0.0.1:6224"`,
      "  ]",
      "}",
    ]);
  });

  it("without them the block is what a root made before route TLS renders", () => {
    const plain = serverConfig(broker, [space(alpha)], { ...opts, cluster: { name: block.name, port: block.port, routes: block.routes } });
    expect(plain).not.toMatch(/tls \{|authorization|@127/);
    expect(plain).toContain('    "nats-route://127.0.0.1:6223"');
  });

  it("pins every node's certificate, one sorted pin a line, in the grammar whose digest cotal predicts", () => {
    const [a, b] = ["b".repeat(64), "a".repeat(64)];
    const text = serverConfig(broker, [space(alpha)], { ...opts, cluster: { ...block, tls: { ...block.tls, pinned: [a, b, a] } } });
    const lines = text.split("\n");
    const at = lines.indexOf("    verify: true");
    expect(lines.slice(at, at + 6)).toEqual(["    verify: true", "    pinned_certs: [", `      "${b}"`, `      "${a}"`, "    ]", "    timeout: 5"]);
    expect(natsConfigDigest(text)).toMatch(/^sha256:[0-9a-f]{64}$/);
    for (const pinned of [[], ["A".repeat(64)], ["a".repeat(63)], [`${"a".repeat(64)}"`], [`x${"a".repeat(64)}`], ["a".repeat(64), "a".repeat(65)]]) {
      expect(refusalOf(() => serverConfig(broker, [space(alpha)], { ...opts, cluster: { ...block, tls: { ...block.tls, pinned } } })).message).toContain("pin");
    }
  });

  it("refuses a malformed route user, password or route URL", () => {
    for (const auth of [{ user: "Bad User", password: PW }, { user: "route user", password: PW }, { user: "u", password: "short" }, { user: "u", password: `${PW}"x` }, { user: "u", password: `x"${PW}` }]) {
      expect(refusalOf(() => serverConfig(broker, [space(alpha)], { ...opts, cluster: { ...block, auth } })).code).toBe("render-refused");
    }
    expect(refusalOf(() => serverConfig(broker, [space(alpha)], { ...opts, cluster: { ...block, routes: ["nats-route://a:b@127.0.0.1:1"] } })).code).toBe("render-refused");
    expect(refusalOf(() => serverConfig(broker, [space(alpha)], { ...opts, cluster: { ...block, routes: ["tls://nats-route://127.0.0.1:1"] } })).message).toContain("is not nats-route://host:port");
    expect(refusalOf(() => serverConfig(broker, [space(alpha)], { ...opts, cluster: { ...block, tls: { ...block.tls, keyFile: 'k"\nx' } } })).code).toBe("render-refused");
  });
});

describe("settings' routeTls and routeAuth", () => {
  const layout = new RootLayout("/r");
  const c = newClusterSettings("c", [1, 2, 3], [4, 5, 6]);
  const files = { source: "files" as const, caFile: "/etc/nats/ca.pem", nodes: Object.fromEntries(c.nodes.map((n) => [n.name, { certFile: `/etc/nats/${n.name}.pem`, keyFile: `/etc/nats/${n.name}-key.pem` }])) };

  it("takes cotal's own CA, the operator's files and a route user; absent is an older root", () => {
    expect(clusterOf(layout, { cluster: c })).toEqual(c);
    const ours = { ...c, routeTls: { source: "cotal" as const }, routeAuth: { user: "cotal-route" } };
    expect(clusterOf(layout, { cluster: ours })).toEqual(ours);
    expect(clusterOf(layout, { cluster: { ...c, routeTls: files } })).toEqual({ ...c, routeTls: files });
  });

  it("refuses a malformed one, never guesses", () => {
    const { [c.nodes[2]?.name ?? ""]: _dropped, ...twoNodes } = files.nodes;
    for (const bad of [
      { routeTls: "cotal" },
      { routeTls: { source: "mine" } },
      { routeTls: { source: "cotal", caFile: "/x" } },
      { routeTls: { ...files, caFile: "relative/ca.pem" } },
      { routeTls: { ...files, nodes: twoNodes } },
      { routeTls: { ...files, nodes: { ...files.nodes, stranger: { certFile: "/a", keyFile: "/b" } } } },
      { routeTls: { ...files, caFile: '/a"b' } },
      { routeAuth: { user: "Route User" } },
      { routeAuth: { user: "r", password: "inline" } },
      { routeAuth: "cotal-route" },
    ]) {
      expect(refusalOf(() => clusterOf(layout, { cluster: { ...c, ...bad } })).code, JSON.stringify(bad)).toBe("corrupt-record");
    }
  });
});

describe("the certificates cotal makes for a new cluster root", () => {
  const roots: { remove(): void }[] = [];
  afterEach(() => roots.splice(0).forEach((r) => r.remove()));

  it("a CA and one certificate per node, keys 0600 in a 0700 dir; every node renders its own, and the guard drops them", async () => {
    const root = createTempRoot();
    roots.push(root);
    const s = loadSettings(root.layout);
    if (!s) throw new Error("no settings");
    const cluster = newClusterSettings("cm", [14001, 14002, 14003], [15001, 15002, 15003]);
    const security = await createRouteSecurity(root.layout, cluster, (n) => (n === "cm-n3" ? "10.99.0.3" : "127.0.0.1"));
    expect(security).toEqual({ routeTls: { source: "cotal" }, routeAuth: { user: "cotal-route" } });
    const dir = routesDir(root.layout);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    expect(readdirSync(dir).sort()).toEqual(["ca-key.pem", "ca.pem", "cm-n1-key.pem", "cm-n1.pem", "cm-n2-key.pem", "cm-n2.pem", "cm-n3-key.pem", "cm-n3.pem", "route-auth.json"]);
    for (const f of readdirSync(dir)) expect(statSync(join(dir, f)).mode & 0o777, f).toBe(0o600);
    expect(readdirSync(root.layout.root).filter((f) => f.includes(".routes."))).toEqual([]); // no staging left
    const n3 = cotalTlsFiles(root.layout, "cm-n3");
    expect(execFileSync("openssl", ["verify", "-CAfile", n3.caFile, n3.certFile], { encoding: "utf8" })).toMatch(/OK/);
    const text = execFileSync("openssl", ["x509", "-in", n3.certFile, "-noout", "-text"], { encoding: "utf8" });
    expect(text).toMatch(/IP Address:127\.0\.0\.1/);
    expect(text).toMatch(/IP Address:10\.99\.0\.3/);
    expect(text).toMatch(/TLS Web Server Authentication, TLS Web Client Authentication/);

    saveSettings(root.layout, { ...s, cluster: { ...cluster, ...security } });
    const password = (JSON.parse(readFileSync(routeAuthFile(root.layout), "utf8")) as { password: string }).password;
    expect(password).toMatch(/^[0-9a-f]{48}$/);
    const conf = renderNode(root.layout, "cm-n2", [], { maintenance: true }).text;
    expect(conf).toContain(`cert_file: "${cotalTlsFiles(root.layout, "cm-n2").certFile}"`);
    expect(conf).toContain(`ca_file: "${n3.caFile}"`);
    expect(conf).toContain(`"nats-route://cotal-route:${password}@127.0.0.1:15003"`);
    // Every node pins all three certificates, each pin as openssl computes it (SHA-256 of the DER public key).
    const opensslPin = (f: string): string => {
      const der = execFileSync("openssl", ["pkey", "-pubin", "-outform", "der"], { input: execFileSync("openssl", ["x509", "-in", f, "-pubkey", "-noout"]) });
      return execFileSync("sha256sum", { input: der }).toString().split(" ")[0] as string;
    };
    const pins = cluster.nodes.map((n) => opensslPin(cotalTlsFiles(root.layout, n.name).certFile));
    expect(pins.map((p, i) => routePin(readFileSync(cotalTlsFiles(root.layout, `cm-n${i + 1}`).certFile, "utf8")))).toEqual(pins);
    expect(conf).toContain(["    pinned_certs: [", ...[...pins].sort().map((p) => `      "${p}"`), "    ]"].join("\n"));
    expect(renderNode(root.layout, "cm-n2", [], { maintenance: true, guards: { ...GUARDS_ON, ROUTES_UNPINNED: true } }).text).not.toContain("pinned_certs");
    expect(renderNode(root.layout, "cm-n2", [], { maintenance: true, guards: { ...GUARDS_ON, ROUTES_UNPINNED: true } }).text).toContain("verify: true");
    // A node's lost certificate refuses the render; an operator's that is not readable here pins nothing.
    const withCluster = clusterOf(root.layout, loadSettings(root.layout));
    if (!withCluster) throw new Error("no cluster");
    const n1 = cotalTlsFiles(root.layout, "cm-n1").certFile;
    const kept = readFileSync(n1);
    rmSync(n1);
    expect(refusalOf(() => routePins(root.layout, withCluster)).message).toContain(n1);
    writeFileSync(n1, "not a certificate");
    expect(refusalOf(() => routePins(root.layout, withCluster)).code).toBe("corrupt-record");
    writeFileSync(n1, kept);
    expect(routePins(root.layout, withCluster)).toEqual(Object.fromEntries(cluster.nodes.map((n, i) => [n.name, pins[i]])));
    const files = { source: "files" as const, caFile: "/nowhere/ca.pem", nodes: Object.fromEntries(cluster.nodes.map((n) => [n.name, { certFile: cotalTlsFiles(root.layout, n.name).certFile, keyFile: "/k" }])) };
    expect(routePins(root.layout, { ...withCluster, routeTls: files })).toEqual(routePins(root.layout, withCluster));
    expect(routePins(root.layout, { ...withCluster, routeTls: { ...files, nodes: { ...files.nodes, "cm-n2": { certFile: "/nowhere/n2.pem", keyFile: "/k" } } } })).toBeUndefined();
    expect(routePins(root.layout, { ...withCluster, routeTls: undefined })).toBeUndefined();
    // The guard's control: no TLS, no authorization, bare routes.
    const open = renderNode(root.layout, "cm-n2", [], { maintenance: true, guards: { ...GUARDS_ON, ROUTES_WITHOUT_AUTH: true } }).text;
    expect(open).not.toMatch(/tls \{|authorization|cotal-route/);
    expect(open).toContain('"nats-route://127.0.0.1:15003"');
    // The operator's files render as given.
    const theirs = { source: "files" as const, caFile: "/etc/nats/ca.pem", nodes: Object.fromEntries(cluster.nodes.map((n) => [n.name, { certFile: `/etc/nats/${n.name}.pem`, keyFile: `/etc/nats/${n.name}.key` }])) };
    expect(nodeRouteSecurity(root.layout, { routeTls: theirs }, "cm-n1")).toEqual({ tls: { certFile: "/etc/nats/cm-n1.pem", keyFile: "/etc/nats/cm-n1.key", caFile: "/etc/nats/ca.pem" } });
    // A lost password file refuses, naming it: no node may render routes without it.
    rmSync(routeAuthFile(root.layout));
    expect(refusalOf(() => renderNode(root.layout, "cm-n2", [], { maintenance: true })).code).toBe("corrupt-record");
    writeFileSync(routeAuthFile(root.layout), "{}");
    expect(refusalOf(() => renderNode(root.layout, "cm-n2", [], { maintenance: true })).message).toContain("route-auth.json");
  });
});
