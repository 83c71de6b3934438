import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort, natsServerBinary } from "@cotal/harness";
import { connect } from "@nats-io/transport-node";
import type { UpResult } from "@cotal/core";
import { loadBrokerTrust } from "@cotal/core/root";
import type { LiveRoot } from "../fixtures/live-root.js";
import { askServer, disposeClusterRoot, systemCreds, upClusterRoot } from "../fixtures/cluster-root.js";
import { client, sleep } from "../fixtures/isolation.js";
import { credsText } from "../fixtures/tenants.js";
import { serverIdOf } from "../fixtures/route-proxy.js";
import { until } from "../fixtures/until.js";
import { VERSION_DEPENDENT } from "../fixtures/tags.js";

// Route TLS and auth (docs/cluster.md "Route TLS and auth"): a cluster root's routes are mutual TLS
// against the root's own CA and carry its route password, so a nats-server that is not a node cannot
// join the cluster, and a subscriber on it sees none of a tenant's traffic. Red with ROUTES_WITHOUT_AUTH
// (the nodes render plain, open routes: the plain stranger joins and its spy reads the tenant's messages).

let r: LiveRoot | undefined;
let up: UpResult;
let sys: string;
const strangers: ChildProcess[] = [];

interface Route {
  remote_id?: string;
}

/** The distinct servers a node routes to (2.10+ pools several connections per peer). */
async function routedTo(url: string): Promise<Set<string>> {
  const z = await askServer<{ routes?: Route[] }>(url, sys, "ROUTEZ");
  return new Set((z.routes ?? []).map((x) => x.remote_id ?? ""));
}

/** The account a creds' user belongs to (the tenant's public key): its JWT's `issuer_account`, else its issuer. */
function accountOf(creds: string): string {
  const jwt = /-----BEGIN NATS USER JWT-----\s+(\S+)\s+/.exec(creds)?.[1] ?? "";
  const claims = JSON.parse(Buffer.from(jwt.split(".")[1] ?? "", "base64url").toString("utf8")) as { iss: string; nats?: { issuer_account?: string } };
  return claims.nats?.issuer_account ?? claims.iss;
}

interface Stranger {
  name: string;
  port: number;
  log: string;
}

/**
 * A nats-server that is no node: its own config on its own ports, the cluster's name, one route to
 * node 1's route port. Its account named like the tenant's (a plain user `spy`) would receive the
 * tenant's messages if its route joined: route interest is per account name.
 */
async function startStranger(dir: string, name: string, o: { tenant: string; cluster: string; routeTo: string; tls?: { cert: string; key: string; ca: string } }): Promise<Stranger> {
  mkdirSync(dir, { recursive: true });
  const port = await freePort();
  const log = join(dir, `${name}.log`);
  const conf = join(dir, `${name}.conf`);
  const tls = o.tls ? `  tls {\n    cert_file: "${o.tls.cert}"\n    key_file: "${o.tls.key}"\n    ca_file: "${o.tls.ca}"\n    verify: true\n  }\n` : "";
  writeFileSync(
    conf,
    `server_name: ${name}\nlisten: "127.0.0.1:${port}"\nlog_file: "${log}"\naccounts {\n  ${o.tenant}: { users: [ { user: spy, password: spy } ] }\n}\ncluster {\n  name: "${o.cluster}"\n  listen: "127.0.0.1:${await freePort()}"\n${tls}  routes: [ "${o.routeTo}" ]\n}\n`,
  );
  const p = spawn(await natsServerBinary(), ["-c", conf], { stdio: "ignore" });
  strangers.push(p);
  await until(`stranger ${name} listening`, async () => ((await serverIdOf(port).catch(() => undefined)) ? true : undefined), 10_000, 100);
  return { name, port, log };
}

/** A CA of its own and a certificate it signed for 127.0.0.1: a well-formed TLS peer the cluster never trusted. */
function foreignCert(dir: string): { cert: string; key: string; ca: string } {
  mkdirSync(dir, { recursive: true });
  const o = (args: string[]): void => void execFileSync("openssl", args, { cwd: dir, stdio: "ignore" });
  o(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "ca-key.pem", "-out", "ca.pem", "-days", "2", "-subj", "/CN=foreign CA"]);
  o(["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "key.pem", "-out", "req.csr", "-subj", "/CN=stranger"]);
  writeFileSync(join(dir, "ext"), "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n");
  o(["x509", "-req", "-in", "req.csr", "-CA", "ca.pem", "-CAkey", "ca-key.pem", "-set_serial", "7", "-days", "2", "-extfile", "ext", "-out", "cert.pem"]);
  return { cert: join(dir, "cert.pem"), key: join(dir, "key.pem"), ca: join(dir, "ca.pem") };
}

beforeAll(async () => {
  ({ r, up } = await upClusterRoot("cotal-routes-"));
  sys = systemCreds(loadBrokerTrust(r.layout).system, "ROUTEZ");
});
afterAll(async () => {
  for (const p of strangers) p.kill("SIGKILL");
  await disposeClusterRoot(r);
});

// Version-tagged: the route TLS handshake and its log lines are the server's (and its Go's) own.
describe("cluster routes: mutual TLS and route auth", VERSION_DEPENDENT, () => {
  it("positive control: the nodes route to each other over TLS and a tenant's client works across nodes", async () => {
    const root = r as LiveRoot;
    const nodes = up.nodes ?? [];
    expect(nodes).toHaveLength(3);
    const ids = await Promise.all(nodes.map((n) => serverIdOf(n.port)));
    for (const [i, n] of nodes.entries()) {
      const peers = await until(`${n.name} routes to both others`, async () => {
        const to = await routedTo(n.url);
        return to.size === 2 ? to : undefined;
      });
      expect([...peers].sort()).toEqual(ids.filter((_, j) => j !== i).sort());
    }
    // The render carries TLS (verify) and auth on every node (what the stranger cell relies on).
    const conf = readFileSync(root.layout.nodeServerConf(nodes[0]?.name ?? ""), "utf8");
    expect(conf).toMatch(/^ {4}verify: true$/m);
    expect(conf).toMatch(/^ {2}authorization \{$/m);
    // A tenant's application: subscribed through node 1, published through node 3.
    const creds = await credsText(root, "default");
    const sub = await client(nodes[0]?.url ?? "", creds, "routes-sub");
    const pub = await client(nodes[2]?.url ?? "", creds, "routes-pub");
    try {
      let got = 0;
      sub.nc.subscribe("cotal.default.events.order", { callback: () => void got++ });
      await sub.nc.flush();
      await until("the subscription reaches node 3", async () => {
        pub.nc.publish("cotal.default.events.order", "o-1");
        await pub.nc.flush();
        return got > 0 ? true : undefined;
      }, 10_000, 200).catch((e: Error) => {
        throw new Error(`${e.message}: sub errors ${JSON.stringify(sub.errors)}, pub errors ${JSON.stringify(pub.errors)}`);
      });
    } finally {
      await sub.close();
      await pub.close();
    }
  });

  it("a stranger server is refused: no TLS, another CA's cert, a node's cert without the route password", async () => {
    const root = r as LiveRoot;
    const nodes = up.nodes ?? [];
    const n1 = nodes[0];
    if (!n1?.clusterPort) throw new Error("node 1 has no route port");
    const settings = JSON.parse(readFileSync(root.layout.settingsFile, "utf8")) as { cluster: { name: string } };
    const { user, password } = JSON.parse(readFileSync(join(root.root, "routes", "route-auth.json"), "utf8")) as { user: string; password: string };
    const creds = await credsText(root, "default");
    const tenant = accountOf(creds);
    const dir = join(dirname(root.root), "strangers");
    const bare = `nats-route://127.0.0.1:${n1.clusterPort}`;
    const n3 = nodes[2]?.name ?? "";
    const common = { tenant, cluster: settings.cluster.name };
    const plain = await startStranger(dir, "stranger-plain", { ...common, routeTo: bare });
    const foreign = await startStranger(dir, "stranger-foreign-ca", { ...common, routeTo: `nats-route://${user}:${password}@127.0.0.1:${n1.clusterPort}`, tls: foreignCert(join(dir, "foreign")) });
    const noCreds = await startStranger(dir, "stranger-no-creds", {
      ...common,
      routeTo: bare,
      tls: { cert: join(root.root, "routes", `${n3}.pem`), key: join(root.root, "routes", `${n3}-key.pem`), ca: join(root.root, "routes", "ca.pem") },
    });
    const strangerIds = await Promise.all([plain, foreign, noCreds].map((s) => serverIdOf(s.port)));

    // A spy on each stranger, in the tenant's account name; the tenant publishes through every node.
    const spies = await Promise.all([plain, foreign, noCreds].map((s) => connect({ servers: `nats://127.0.0.1:${s.port}`, user: "spy", pass: "spy", reconnect: false, timeout: 5_000 })));
    const seen = spies.map(() => 0);
    spies.forEach((nc, i) => nc.subscribe(">", { callback: () => void (seen[i] = (seen[i] ?? 0) + 1) }));
    await Promise.all(spies.map((nc) => nc.flush()));
    const pubs = await Promise.all(nodes.map((n) => client(n.url, creds, "routes-tenant")));
    try {
      // Each stranger dials its route about once a second: 4 s of publishing spans several attempts.
      const until4s = Date.now() + 4_000;
      let sent = 0;
      while (Date.now() < until4s) {
        for (const p of pubs) p.nc.publish("cotal.default.events.order", `o-${sent++}`);
        await Promise.all(pubs.map((p) => p.nc.flush()));
        await sleep(100);
      }
      expect(sent).toBeGreaterThan(60);
      // From the nodes' side: each routes to the other two nodes and to no stranger.
      for (const n of nodes) {
        const to = await routedTo(n.url);
        for (const id of strangerIds) expect(to.has(id), `${n.name} routes to a stranger`).toBe(false);
        expect(to.size, `${n.name}'s routes`).toBe(2);
      }
      // From a tenant's side: a subscriber on a stranger saw none of the tenant's traffic.
      expect(seen, "messages a stranger's spy received").toEqual([0, 0, 0]);
    } finally {
      await Promise.all(pubs.map((p) => p.close()));
      await Promise.all(spies.map((nc) => nc.close().catch(() => undefined)));
    }
    // From each stranger's own log: why its route never came up.
    const logOf = (s: Stranger): string => readFileSync(s.log, "utf8");
    expect(logOf(plain)).toMatch(/Router connection closed: Client Closed/);
    expect(logOf(foreign)).toMatch(/TLS route handshake error: .*certificate signed by unknown authority/);
    expect(logOf(noCreds)).toMatch(/Route Error 'Authorization Violation'/);
    // And node 1's: a plain route is no TLS handshake, the foreign one presents a bad certificate, the one without the password fails authentication.
    const n1log = readFileSync(root.layout.nodeLogFile(n1.name), "utf8");
    expect(n1log).toMatch(/TLS route handshake error: tls: first record does not look like a TLS handshake/);
    expect(n1log).toMatch(/TLS route handshake error: .*bad certificate/);
    expect(n1log).toMatch(/authentication error/);
    // The route password is in the node configs only: no node's log carries it.
    for (const n of nodes) expect(readFileSync(root.layout.nodeLogFile(n.name), "utf8").includes(password), `${n.name}'s log holds the route password`).toBe(false);
  });
});
