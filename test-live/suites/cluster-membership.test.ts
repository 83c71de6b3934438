import { execFileSync, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { CredentialPoller, freePorts, harnessTeardown, monotonicMs, type PollReport } from "@cotal/harness";
import type { NodeAddResult, NodeForgetResult, UpResult } from "@cotal/core";
import { loadBrokerTrust } from "@cotal/core/root";
import { spaceTemplate } from "@cotal/core/provision";
import { Kvm } from "@nats-io/kv";
import { parseJson, type LiveRoot } from "../fixtures/live-root.js";
import { cell } from "../fixtures/matrix.js";
import { ok } from "../fixtures/space-data.js";
import { connects, credsText, statusOf } from "../fixtures/tenants.js";
import { connectCreds } from "../fixtures/nats.js";
import { until } from "../fixtures/until.js";
import { alive, expectNeverAfter, nodesOf, stopAll } from "../fixtures/cluster.js";
import { askServer, disposeClusterRoot, systemCreds, upClusterRoot } from "../fixtures/cluster-root.js";
import { AppClient } from "../fixtures/app-client.js";
import { VERSION_DEPENDENT } from "../fixtures/tags.js";
import { SpawnedAppClient } from "../fixtures/spawned-app.js";
import { natsServerBinary } from "@cotal/core/server-process";
import { liveServer } from "../fixtures/server-version.js";

// Joining and leaving (docs/cluster.md "Joining: cotal node add", "Leaving: cotal node forget"), judged
// from the tenant's side: beta's applications (nats.js and nats-py, default reconnect settings) write
// throughout; a tenant removed before the join is never admitted by the new node; a tenant removed
// after it is refused on every node, the new one included. Red with NODE_ADD_UNPROVEN (the new node
// serves at once, outside the saga: the record never names its proof).

afterAll(harnessTeardown);

interface Meta {
  meta_cluster?: { replicas?: { name?: string }[]; leader?: string };
}
interface Route {
  remote_id?: string;
}

// JetStream's peer joins and removals differ across releases (the meta group's JSZ, 10044): every supported server runs it.
describe("cotal node add and node forget on a running cluster root", VERSION_DEPENDENT, () => {
  let r: LiveRoot | undefined;
  let up: UpResult;
  let added: NodeAddResult;
  let pinnedBeforeForget: string[] = [];
  let forgot: NodeForgetResult | undefined;
  const apps: { stop(): Promise<unknown> }[] = [];
  afterAll(async () => {
    await Promise.all(apps.map((a) => a.stop().catch(() => undefined)));
    await disposeClusterRoot(r);
  });

  it("node add: a fourth node joins over the routes' TLS and auth, proven with every other node before the verb returns; gamma (removed before) is never admitted there, beta is at once", () =>
    cell("cluster membership: node add", async (m) => {
      ({ r, up } = await upClusterRoot("cotal-join-live-"));
      const root = r;
      for (const s of ["beta", "gamma"]) ok(await root.cotal(["space", "add", s], { timeoutMs: 60_000 }));
      const [beta, gamma] = [await credsText(root, "beta"), await credsText(root, "gamma")];
      const urls = (up.nodes ?? []).map((n) => n.url);
      const js = await AppClient.start(urls, beta, "beta");
      apps.push(js);
      const py = await SpawnedAppClient.start(urls, beta, join(root.root, "..", "beta-py.creds"), "beta");
      apps.push(py);
      await Promise.all([js.writable(), py.writable(20_000)]);
      ok(await root.cotal(["space", "rm", "gamma", "--yes"], { timeoutMs: 60_000 }));

      // The new node's listeners are named, so its pollers run from before it exists.
      const [port, clusterPort] = await freePorts(2);
      const n4url = `nats://127.0.0.1:${port}`;
      const onNew = (creds: string, name: string) => new CredentialPoller({ url: n4url, creds, maxDurationMs: 90_000, threads: 1, concurrency: 2, name }).start();
      const [gammaPoll, betaPoll] = [onNew(gamma, "gamma-on-n4"), onNew(beta, "beta-on-n4")];
      const res = ok(await root.cotal(["node", "add", "--port", String(port), "--cluster-port", String(clusterPort), "--json"], { timeoutMs: 120_000 }));
      const addedAt = monotonicMs();
      added = parseJson<NodeAddResult>(res);
      expect([added.started, added.node.url, added.next]).toEqual([true, n4url, []]);
      // At once: beta is admitted on the new node, and its KV write there is read through node 1.
      expect(await connects(n4url, beta), "beta on the new node right after the add").toBe(true);
      await kvRoundTrip(n4url, urls[0] as string, beta);
      await new Promise((res) => setTimeout(res, 500));
      const [gammaSeen, betaSeen] = (await stopAll([gammaPoll, betaPoll])) as [PollReport, PollReport];
      m.notes = [`node add: ${added.node.name}; gamma on it: ${gammaSeen.total} attempts, ${gammaSeen.successes} admitted; beta: ${betaSeen.successes} admitted`];
      expect(gammaSeen.successes, "the new node admitted gamma, removed before it joined").toBe(0);
      expect(gammaSeen.total, "gamma was polled on the new node").toBeGreaterThan(10);
      expect(betaSeen.successesBetween(addedAt, Number.POSITIVE_INFINITY, "within"), "beta admitted on the new node after the add (the positive control)").toBeGreaterThan(0);

      // The record names it: every node, the new one included, proven on the committed generation.
      const st = await statusOf(root);
      const gen = st.inventory?.generation;
      expect(nodesOf(st).map((n) => [n.name, n.appliedGeneration, n.state])).toEqual([...(up.nodes ?? []).map((n) => n.name), added.node.name].map((n) => [n, gen, "clean"]));
      // Its routes: mutual TLS with the CA's certificate it was given, and the password (docs/cluster.md "Route TLS and auth").
      const sys = systemCreds(loadBrokerTrust(root.layout).system, "ROUTEZ");
      const routed = await until("the new node routed to the three others", async () => {
        const ids = new Set(((await askServer<{ routes?: Route[] }>(n4url, sys, "ROUTEZ")).routes ?? []).map((x) => x.remote_id));
        return ids.size === 3 ? ids : undefined;
      }, 15_000);
      expect(routed.size).toBe(3);
      expect(readFileSync(join(root.layout.nodeDir(added.node.name), "server.conf"), "utf8")).toMatch(/verify: true/);
      pinnedBeforeForget = (up.nodes ?? []).map((n) => readFileSync(root.layout.nodeServerConf(n.name), "utf8"));

      // A removal after the join proves on all four: delta's cred, polled on every node, never connects after it.
      ok(await root.cotal(["space", "add", "delta"], { timeoutMs: 60_000 }));
      const delta = await credsText(root, "delta");
      const every = [...urls, n4url];
      const pollers = every.map((url, i) => new CredentialPoller({ url, creds: delta, maxDurationMs: 90_000, threads: 1, concurrency: 3, name: `delta-n${i + 1}` }).start());
      await Promise.all(pollers.map((p) => p.waitForAttempt((a) => a.ok, { timeoutMs: 10_000 })));
      ok(await root.cotal(["space", "rm", "delta", "--yes"], { timeoutMs: 60_000 }));
      const removedAt = monotonicMs();
      await new Promise((res) => setTimeout(res, 800));
      expectNeverAfter(await stopAll(pollers), removedAt, "delta's removal");
      // Before 2.14.8 every reload bounces beta's clients; a reconnect handshake the next node's bounce cuts
      // leaves nats.js waiting out its connect timeout (20 s by default) before the next server: the
      // documented bound there (docs/server-versions.md, the reload bounce). After 2.14.8 nothing is bounced.
      const bounceMs = liveServer.reloadKeepsJwtClients ? 15_000 : 35_000;
      await Promise.all([js.writable(bounceMs), py.writable(Math.max(bounceMs, 20_000))]);
      expect([js.report.closed, py.report.closed], "an application closed for good").toEqual([false, false]);
    }));

  it("node forget: refused while the node answers; once it is gone, JetStream forgets its peer and the three that remain are proven without it", () =>
    cell("cluster membership: node forget", async (m) => {
      if (!r || !added) throw new Error("the node add cell runs first");
      const root = r;
      const name = added.node.name;
      const settingsBefore = readFileSync(root.layout.settingsFile);
      const refused = await root.cotal(["node", "forget", name], { timeoutMs: 30_000 });
      expect(refused.code, refused.stderr).toBe(4);
      expect(refused.stderr).toMatch(/still answers .*\[live-process\]/);
      expect(refused.stderr).toMatch(new RegExp(`next: cotal --root \\S+ status .*node forget ${name}`));
      expect(readFileSync(root.layout.settingsFile).equals(settingsBefore), "settings.json untouched by the refusal").toBe(true);

      // Gone for good: its server killed. The meta group still lists it (the control).
      const pid = added.up?.nodes?.find((n) => n.name === name)?.pid as number;
      const sys = systemCreds(loadBrokerTrust(root.layout).system, "JSZ");
      const n1 = (up.nodes ?? [])[0]?.url as string;
      // The meta group's peers as its leader lists them (2.9 and 2.14 fill `replicas` on the leader only): every node's answer, joined.
      const peers = async (): Promise<string[]> => {
        const seen = await Promise.all((up.nodes ?? []).map((n) => askServer<Meta>(n.url, sys, "JSZ").then((d) => d.meta_cluster).catch(() => undefined)));
        return [...new Set(seen.flatMap((mc) => [mc?.leader, ...(mc?.replicas ?? []).map((p) => p.name)]).filter((n): n is string => typeof n === "string" && n !== ""))];
      };
      expect(await peers()).toContain(name);
      // Its agent's authority user is admitted now (the control), as node 2's is.
      const agentCreds = (node: string, which = "authority") => readFileSync(join(root.layout.nodeAgentCredsDir(node), `${which}.creds`), "utf8");
      const n2name = (up.nodes ?? [])[1]?.name as string;
      expect([await connects(n1, agentCreds(name)), await connects(n1, agentCreds(n2name))]).toEqual([true, true]);
      expect([await connects(n1, agentCreds(name, "system")), await connects(n1, agentCreds(n2name, "system"))], "both agents' system users before").toEqual([true, true]);
      process.kill(pid, "SIGKILL");
      await until("the new node's server gone", async () => (alive(pid) ? undefined : true), 10_000);

      const res = ok(await root.cotal(["node", "forget", name, "--json"], { timeoutMs: 120_000 }));
      const out = parseJson<NodeForgetResult>(res);
      m.notes = [`node forget ${name}: peer ${out.peer}`];
      expect(out.peer).toBe("removed");
      // A host that kept the forgotten node's files can no longer read the record or the node material; node 2's agent still can.
      expect(await connects(n1, agentCreds(name)), "the forgotten node's agent user after forget").toBe(false);
      expect(out.revoked).toMatch(/^U[A-Z2-7]{55}$/);
      expect(await connects(n1, agentCreds(n2name)), "node 2's agent user after forget").toBe(true);
      expect([await connects(n1, agentCreds(name, "system")), await connects(n1, agentCreds(n2name, "system"))], "the agents' system users after forget").toEqual([false, true]);
      expect(out.revokedSystem).toMatch(/^U[A-Z2-7]{55}$/);
      forgot = out;
      expect(await until("the meta group without it", async () => ((await peers()).includes(name) ? undefined : true), 15_000)).toBe(true);
      const st = await statusOf(root);
      expect(nodesOf(st).map((n) => [n.name, n.state])).toEqual((up.nodes ?? []).map((n) => [n.name, "clean"]));
      for (const n of up.nodes ?? []) expect(readFileSync(join(root.layout.nodeDir(n.name), "server.conf"), "utf8"), n.name).not.toContain(`:${added.node.clusterPort}"`);
      // A removal needs only the three that remain now; epsilon's cred never connects after it.
      ok(await root.cotal(["space", "add", "epsilon"], { timeoutMs: 60_000 }));
      const eps = await credsText(root, "epsilon");
      const pollers = (up.nodes ?? []).map((n, i) => new CredentialPoller({ url: n.url, creds: eps, maxDurationMs: 90_000, threads: 1, concurrency: 3, name: `eps-n${i + 1}` }).start());
      await Promise.all(pollers.map((p) => p.waitForAttempt((a) => a.ok, { timeoutMs: 10_000 })));
      ok(await root.cotal(["space", "rm", "epsilon", "--yes"], { timeoutMs: 60_000 }));
      const removedAt = monotonicMs();
      await new Promise((res) => setTimeout(res, 800));
      expectNeverAfter(await stopAll(pollers), removedAt, "epsilon's removal");
      // beta's applications lived through it: a client on the killed node reconnected elsewhere (docs/cluster.md).
      for (const a of apps as (AppClient | SpawnedAppClient)[]) await a.writable(30_000);
      expect((apps as (AppClient | SpawnedAppClient)[]).map((a) => a.report.closed)).toEqual([false, false]);
    }));

  it("a forgotten node that comes back with its files is refused at every route: no remaining node pins its certificate", () =>
    cell("cluster membership: a forgotten node stays out", async (m) => {
      if (!r || !added) throw new Error("the node add and forget cells run first");
      const root = r;
      const name = added.node.name;
      // Its host kept everything: its config (still naming the three others, with the route password), certificate, key and store.
      const conf = root.layout.nodeServerConf(name);
      expect(readFileSync(conf, "utf8")).toMatch(/routes: \[/);
      const child = spawn(natsServerBinary(), ["-c", conf], { stdio: "ignore" });
      try {
        const system = loadBrokerTrust(root.layout).system;
        const [varz, routez] = [systemCreds(system, "VARZ"), systemCreds(system, "ROUTEZ")];
        // The control: it runs, answers, and dials the three others.
        const own = await until("the forgotten node answers", async () => askServer<{ server_id?: string; cluster?: { urls?: string[] } }>(added.node.url, varz, "VARZ").catch(() => undefined), 15_000);
        expect(own.cluster?.urls?.length, "the routes it dials").toBe(3);
        let samples = 0;
        const until6s = monotonicMs() + 6_000;
        while (monotonicMs() < until6s) {
          const mine = (await askServer<{ routes?: Route[] }>(added.node.url, routez, "ROUTEZ")).routes ?? [];
          expect(mine.length, "routes on the forgotten node").toBe(0);
          for (const n of up.nodes ?? []) {
            const ids = ((await askServer<{ routes?: Route[] }>(n.url, routez, "ROUTEZ")).routes ?? []).map((x) => x.remote_id);
            expect(ids, `${n.name} routed to the forgotten node`).not.toContain(own.server_id);
          }
          samples += 1;
          await new Promise((res) => setTimeout(res, 400));
        }
        m.notes = [`${samples} samples over 6 s: no route to or from the forgotten node`];
        expect(samples).toBeGreaterThan(3);
      } finally {
        child.kill("SIGKILL");
      }
      // Why (docs/cluster.md "A forgotten node stays out"): every node pinned its certificate while it was a member, none does now (the pin as openssl computes it).
      expect(forgot?.routesPinned, "forget's result says the routes refuse it").toBe(true);
      const pin = pinOf(join(root.root, "routes", `${name}.pem`));
      for (const conf of pinnedBeforeForget) expect(conf).toMatch(new RegExp(`pinned_certs: \\[[^\\]]*"${pin}"`));
      for (const n of up.nodes ?? []) expect(readFileSync(root.layout.nodeServerConf(n.name), "utf8"), n.name).toMatch(/pinned_certs: \[/);
      for (const n of up.nodes ?? []) expect(readFileSync(root.layout.nodeServerConf(n.name), "utf8"), n.name).not.toContain(pin);
      for (const a of apps as (AppClient | SpawnedAppClient)[]) await a.writable(30_000);
    }));
});

/** A certificate's pin as nats-server's pinned_certs takes it, computed by openssl (not by cotal): SHA-256 of its DER public key. */
function pinOf(certFile: string): string {
  const der = execFileSync("openssl", ["pkey", "-pubin", "-outform", "der"], { input: execFileSync("openssl", ["x509", "-in", certFile, "-pubkey", "-noout"]) });
  return execFileSync("sha256sum", { input: der }).toString().split(" ")[0] as string;
}

/** A KV put through `writeUrl` as the tenant, read back through `readUrl`. */
async function kvRoundTrip(writeUrl: string, readUrl: string, creds: string): Promise<void> {
  const bucket = spaceTemplate("beta").buckets.find((b) => b.class === "durable")?.bucket as string;
  const [w, rd] = [await connectCreds(writeUrl, creds), await connectCreds(readUrl, creds)];
  try {
    const value = `joined-${Date.now()}`;
    await (await new Kvm(w).open(bucket)).put("join.k", new TextEncoder().encode(value));
    expect((await (await new Kvm(rd).open(bucket)).get("join.k"))?.string()).toBe(value);
  } finally {
    await Promise.all([w.close(), rd.close()]);
  }
}
