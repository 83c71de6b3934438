import { afterAll, afterEach, describe, expect, it } from "vitest";
import { harnessTeardown } from "@cotal/harness";
import type { SpaceListReport, StatusReport } from "@cotal/core";
import { parseJson, type LiveRoot } from "../fixtures/live-root.js";
import { AppClient } from "../fixtures/app-client.js";
import { alive, disposeClusterRoots, nodesOf, upCluster } from "../fixtures/cluster.js";
import { runPrinted } from "../fixtures/printed.js";
import { connects, credsText, statusOf, untilStatus } from "../fixtures/tenants.js";
import { until } from "../fixtures/until.js";

// docs/cluster.md "Verbs through any node": kill -9 of node 1 (the node run/broker.json names first).
// `status` still answers, names node 1 unreachable and goes through another node; `space add beta`
// commits through another node with node 1 left behind; `space list` shows beta; the printed
// `cotal up --detach` brings node 1 back and every node is clean. A tenant's application (nats.js,
// default options, every node's URL) writes its R3 KV bucket throughout and never closes for good. Red with
// COTAL_TEST_UNSAFE_VERBS_FIRST_NODE_ONLY=1 (verbs through node 1 alone: the add refuses
// broker-not-running while node 1 is down).

const apps: AppClient[] = [];
afterEach(async () => {
  await Promise.all(apps.splice(0).map((a) => a.stop()));
  await disposeClusterRoots();
});
afterAll(harnessTeardown);

const CELL_MS = 300_000;

/**
 * Tenant streams at R3, so the surviving tenant's KV bucket has replicas on nodes 2 and 3 and its
 * writes go on once they elect. At R1 the meta leader places a stream on the node with the most free
 * store, and a CI run saw eight buckets in a row land on node 1.
 */
const TENANT_REPLICAS = ["--tenant-replicas", "3"];

async function spaceNames(r: LiveRoot): Promise<string[]> {
  const res = await r.cotal(["space", "list", "--json"], { timeoutMs: 30_000 });
  expect(res.code, res.stderr).toBe(0);
  return parseJson<SpaceListReport>(res).spaces.map((s) => s.name);
}

const reachOf = (st: StatusReport): [string, boolean | null][] => nodesOf(st).map((n) => [n.name, n.reachable]);

describe("verbs through any node (docs/cluster.md)", () => {
  it("kill -9 of node 1: status names it unreachable and goes through another node, space add beta commits with node 1 behind, up brings it back", async () => {
    const { r, up } = await upCluster(TENANT_REPLICAS);
    const nodes = up.nodes ?? [];
    const [n1, n2, n3] = nodes.map((n) => n.name);
    const add0 = await r.cotal(["space", "add", "alpha"], { timeoutMs: 90_000 });
    expect(add0.code, add0.stderr).toBe(0);
    const tenant = { space: "alpha", creds: await credsText(r, "alpha", "app") };
    const app = await AppClient.start(nodes.map((n) => n.url), tenant.creds, tenant.space, { kvOnly: true, name: "any-node-app" });
    apps.push(app);
    await app.writable();

    // Positive control: every node reached, status through node 1, an add commits, list shows it.
    const before = await statusOf(r);
    expect(reachOf(before)).toEqual([[n1, true], [n2, true], [n3, true]]);
    expect(before.broker.through).toBe(n1);
    expect(before.state, before.why).toBe("clean");
    const pre = await r.cotal(["space", "add", "pre"], { timeoutMs: 90_000 });
    expect(pre.code, pre.stderr).toBe(0);
    expect(await spaceNames(r)).toContain("pre");

    process.kill(nodes[0]?.pid as number, "SIGKILL");
    await until("node 1 gone", () => !alive(nodes[0]?.pid as number), 10_000);

    const t0 = Date.now();
    const first = await statusOf(r);
    const statusMs = Date.now() - t0;
    expect(reachOf(first)).toEqual([[n1, false], [n2, true], [n3, true]]);
    expect(nodesOf(first)[0]?.reach?.why).toMatch(/refused|ECONNREFUSED|cannot connect/i);
    expect(first.broker.running).toBe(true);
    expect(statusMs).toBeLessThan(15_000);
    // The R3 record may be electing a leader if node 1 led it: status reads it once the others have one.
    const st = await untilStatus(r, (s) => s.inventory !== null, 30_000);
    expect([n2, n3]).toContain(st.broker.through);
    expect(st.inventory?.spaces).toContain("pre");
    const text = await r.cotal(["status"], { timeoutMs: 30_000 });
    expect(text.stdout).toMatch(new RegExp(`node:  ${n1} .*\\n    reached: no \\(`));
    expect(text.stdout).toContain(`through ${st.broker.through}`);

    const add = await r.cotal(["space", "add", "beta"], { timeoutMs: 120_000 });
    expect(add.code, `${add.stdout}\n${add.stderr}`).toBe(0);
    expect(`${add.stdout}${add.stderr}`).toMatch(new RegExp(`node ${n1} did not prove it \\(node ${n1} \\(pid \\d+\\) is not running\\) and stay behind`));
    expect(await spaceNames(r)).toEqual(expect.arrayContaining(["beta", "pre", tenant.space]));
    const beta = await credsText(r, "beta", "app");
    expect(await connects(nodes[1]?.url as string, beta)).toBe(true);
    await app.writable(30_000); // the surviving tenant kept writing through node 1's death

    const behind = await statusOf(r);
    expect(behind.state, behind.why).toBe("DEGRADED");
    expect(behind.next).toMatch(/^cotal --root \S+ up\b/);
    const upAgain = await runPrinted(behind.next as string, {}, 180_000); // the printed way out, verbatim
    expect(upAgain.code, `${upAgain.stdout}\n${upAgain.stderr}`).toBe(0);

    const after = await until("every node clean", async () => {
      const s = await statusOf(r);
      return nodesOf(s).every((n) => n.state === "clean") && s.state === "clean" ? s : undefined;
    }, 60_000);
    expect(reachOf(after)).toEqual([[n1, true], [n2, true], [n3, true]]);
    expect(after.broker.through).toBe(n1);
    expect(await connects(nodes[0]?.url as string, beta)).toBe(true);
    await app.writable(30_000);
    const report = await app.stop();
    apps.splice(apps.indexOf(app), 1);
    expect(report.closed, report.closedBy).toBe(false);
    console.log(`[any-node] status with node 1 killed answered in ${statusMs} ms; add took ${add.durationMs} ms; app ${report.kvPuts} puts, ${report.kvFailures.length} failed, ${report.disconnects.length} disconnects`);
  }, CELL_MS);
});
