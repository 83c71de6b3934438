import { afterAll, afterEach, describe, expect, it } from "vitest";
import { connect, credsAuthenticator } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { harnessTeardown } from "@cotal/harness";
import type { StatusReport, UpResult } from "@cotal/core";
import type { LiveRoot } from "../fixtures/live-root.js";
import { AppClient } from "../fixtures/app-client.js";
import { alive, disposeClusterRoots, nodesOf, upCluster } from "../fixtures/cluster.js";
import { startAgent, type RunningAgent } from "../fixtures/node-agent.js";
import { escapeRegExp, runPrinted } from "../fixtures/printed.js";
import { credsText, statusOf } from "../fixtures/tenants.js";
import { until } from "../fixtures/until.js";

// Issue #28, findings 1 and 2 (docs/cluster.md "Restarts"): after a cluster restart — down/up with
// tenant streams R1 and R3, kill -9 of a node then up, a node restarted by its `cotal node run` agent —
// a tenant's application (nats.js, default options, creds of `space creds t1 --user app`) still reads
// the KV key it wrote before and puts new values, and `status --json` says clean exactly then. Red
// with COTAL_TEST_UNSAFE_CLUSTER_BOOT_BARE (nodes boot with no tenant preloaded, as before the fix).

const apps: AppClient[] = [];
const agents: RunningAgent[] = [];
afterEach(async () => {
  await Promise.all(apps.splice(0).map((a) => a.stop()));
  await Promise.all(agents.splice(0).map((a) => a.stop()));
  await disposeClusterRoots();
});
afterAll(harnessTeardown);

const CELL_MS = 300_000;
const BUCKET = "cotal_state_t1";
const KV_STREAM = `KV_${BUCKET}`;

/** A three-node root with space t1 and its application's cred (`--user app`). */
async function rootWithT1(extra: string[] = []): Promise<{ r: LiveRoot; up: UpResult; app: string }> {
  const { r, up } = await upCluster(extra);
  const add = await r.cotal(["space", "add", "t1"], { timeoutMs: 60_000 });
  expect(add.code, add.stderr).toBe(0);
  return { r, up, app: await credsText(r, "t1", "app") };
}

/** A short-lived application connection (nats.js defaults) to the node at `url`. */
async function withApp<T>(url: string, creds: string, fn: (kv: Awaited<ReturnType<Kvm["open"]>>, nc: Awaited<ReturnType<typeof connect>>) => Promise<T>): Promise<T> {
  const nc = await connect({ servers: url, authenticator: credsAuthenticator(new TextEncoder().encode(creds)), name: "restart-cell" });
  try {
    return await fn(await new Kvm(nc).open(BUCKET), nc);
  } finally {
    await nc.close();
  }
}

/** The value the application reads back for `key`, or why not. */
const readKey = (url: string, creds: string, key: string): Promise<string> =>
  withApp(url, creds, async (kv) => (await kv.get(key))?.string() ?? "<absent>").catch((e: Error) => `<error: ${e.message}>`);

/** The application before the restart: it writes (positive control) and leaves `before` in its bucket. */
async function beforeRestart(url: string, creds: string): Promise<void> {
  const app = await AppClient.start(url, creds, "t1");
  apps.push(app);
  await app.writable();
  await withApp(url, creds, (kv) => kv.put("before", "kept across the restart"));
  await app.stop();
  apps.splice(apps.indexOf(app), 1);
}

/** After the restart: the key reads back and a fresh application (nats.js defaults) writes its KV and events. */
async function expectTenantWritable(url: string, creds: string): Promise<void> {
  expect(await readKey(url, creds, "before")).toBe("kept across the restart");
  const app = await AppClient.start(url, creds, "t1");
  apps.push(app);
  await app.writable(30_000);
  await withApp(url, creds, (kv) => kv.put("after", "new"));
  expect(await readKey(url, creds, "after")).toBe("new");
}

function expectAllClean(st: StatusReport): void {
  const seen = JSON.stringify(nodesOf(st).map((n) => ({ node: n.name, state: n.state, streams: n.streams ?? [] })));
  expect(nodesOf(st).map((n) => [n.name, n.state, n.streams ?? []]), `${st.why}; ${seen}`).toEqual(nodesOf(st).map((n) => [n.name, "clean", []]));
  expect(st.state, st.why).toBe("clean");
}

/** The node name that leads t1's KV stream (R1: the one node that hosts it). */
const kvHost = (url: string, creds: string): Promise<string> => withApp(url, creds, async (_kv, nc) => (await (await jetstreamManager(nc)).streams.info(KV_STREAM)).cluster?.leader ?? "");

describe("cluster restarts keep every tenant stream assigned, led and writable", () => {
  it.each([
    ["R1", ["--tenant-replicas", "1"]],
    ["R3", ["--tenant-replicas", "3"]],
  ])("restart: down then up, tenant streams %s: the key reads back, puts succeed, status clean", async (_label, extra) => {
    const { r, up, app } = await rootWithT1(extra);
    const url = up.nodes?.[0]?.url as string;
    await beforeRestart(url, app);
    expectAllClean(await statusOf(r)); // control: clean before
    expect((await r.cotal(["down"])).code).toBe(0);
    const again = await r.cotal(["up", "--detach"], { timeoutMs: 120_000 });
    expect(again.code, again.stderr).toBe(0);
    await expectTenantWritable(url, app);
    expectAllClean(await statusOf(r));
  }, CELL_MS);

  it("restart: kill -9 of the node hosting t1's KV stream (R1), then up: writes fail while it is down, then the key reads back, puts succeed, status clean", async () => {
    const { r, up, app } = await rootWithT1();
    const url = up.nodes?.[0]?.url as string;
    await beforeRestart(url, app);
    const hostName = await kvHost(url, app);
    const victim = (up.nodes ?? []).find((n) => n.name === hostName);
    if (!victim) throw new Error(`no node named ${hostName}`);
    const via = (up.nodes ?? []).find((n) => n.name !== hostName)?.url as string;
    process.kill(victim.pid, "SIGKILL");
    await until("the node gone", () => !alive(victim.pid), 10_000);
    // Control: with its only host down, the tenant's KV is not writable (the kill hit the right node).
    expect(await withApp(via, app, (kv) => kv.put("during", "x").then(() => "ok")).catch((e: Error) => e.message)).not.toBe("ok");
    const again = await r.cotal(["up", "--detach"], { timeoutMs: 120_000 });
    expect(again.code, again.stderr).toBe(0);
    await expectTenantWritable(victim.url, app);
    await expectTenantWritable(via, app);
    expectAllClean(await statusOf(r));
  }, CELL_MS);

  it("restart: the agent of the node hosting t1's KV stream (R1) restarts it after kill -9: serving only once its streams serve; key, puts, status clean", async () => {
    const { r, up, app } = await rootWithT1();
    const url = up.nodes?.[0]?.url as string;
    await beforeRestart(url, app);
    const hostName = await kvHost(url, app);
    const victim = (up.nodes ?? []).find((n) => n.name === hostName);
    if (!victim) throw new Error(`no node named ${hostName}`);
    const a = startAgent(r, victim.name);
    agents.push(a);
    await a.line(/serving generation 2/);
    process.kill(victim.pid, "SIGKILL");
    const restarted = await a.line(/not running; starting it with every tenant held/, 30_000);
    await a.line(/serving generation 2/, 90_000, restarted.at);
    await expectTenantWritable(victim.url, app);
    const st = await statusOf(r);
    expectAllClean(st);
    expect(nodesOf(st).find((n) => n.name === victim.name)?.agent?.state).toBe("serving");
  }, CELL_MS);
});

describe("status judges each node's tenant streams", () => {
  it("status: a cluster booted bare (as before #28) is not clean, names the streams and a next; that next, run verbatim, makes it writable and clean", async () => {
    const { r, up, app } = await rootWithT1(["--tenant-replicas", "3"]);
    const url = up.nodes?.[0]?.url as string;
    await beforeRestart(url, app);
    expect((await r.cotal(["down"])).code).toBe(0);
    // Every node boots with no tenant preloaded, as cotal did before the fix: up refuses naming the streams.
    const bare = await r.cotal(["up", "--detach"], { env: { COTAL_TEST_UNSAFE_CLUSTER_BOOT_BARE: "1" }, timeoutMs: 120_000 });
    expect(bare.code, bare.stderr).toBe(6);
    expect(bare.stderr).toMatch(/\[broker-start-failed\]/);
    expect(bare.stderr).toContain(`t1 ${KV_STREAM}`);
    const st = await statusOf(r);
    expect(st.state, st.why).toBe("DEGRADED");
    for (const n of nodesOf(st)) {
      expect(n.state, `${n.name}: ${n.why}`).toBe("STREAMS UNSERVED");
      expect(n.streams?.map((p) => p.stream)).toContain(KV_STREAM);
      expect(n.next).toMatch(new RegExp(`^cotal --root ${escapeRegExp(r.root)} up --detach   # restarts node ${n.name} `));
    }
    // What status says is what the tenant sees: its KV puts get no reply.
    expect(await withApp(url, app, (kv) => kv.put("during", "x").then(() => "ok")).catch((e: Error) => e.message)).not.toBe("ok");
    const next = nodesOf(st)[0]?.next as string;
    const followed = await runPrinted(next, {}, 150_000);
    expect(followed.code, followed.stderr).toBe(0);
    expect(followed.stdout).toMatch(/did not serve its tenant streams .*: restarted it with every tenant held/);
    await expectTenantWritable(url, app);
    expectAllClean(await statusOf(r));
  }, CELL_MS);
});
