import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { connect, credsAuthenticator, type NatsConnection } from "@nats-io/transport-node";
import { harnessTeardown } from "@cotal/harness";
import type { UpResult } from "@cotal/core";
import { readRuntime } from "@cotal/core/broker";
import { parseJson, snapshotTree, type LiveRoot } from "../fixtures/live-root.js";
import { disposeClusterRoots, upCluster } from "../fixtures/cluster.js";
import { startAgent, type RunningAgent } from "../fixtures/node-agent.js";
import { refusedWith, runPrinted } from "../fixtures/printed.js";
import { ok, upJson } from "../fixtures/space-data.js";
import { credsText, disposeLiveRoots, statusOf, trackedRoot, upRoot } from "../fixtures/tenants.js";
import { until } from "../fixtures/until.js";

// Issue #28, findings 7 and 8: every printed `next:` is run verbatim, by bash, from `/`, with no
// COTAL_ROOT: it must get the operator out (or end in a different refusal), never loop, and keep
// every flag of the refused command. Each cell shows the refusal (its code), follows the line, and
// has a positive control; the guards' cells go red with their COTAL_TEST_UNSAFE_* switch (ablate.sh).

const agents: RunningAgent[] = [];
afterEach(async () => {
  await Promise.all(agents.splice(0).map((a) => a.stop()));
  await disposeClusterRoots();
  await disposeLiveRoots();
});
afterAll(harnessTeardown);

const MiB = 1024 ** 2;

/** A root whose JetStream budget leaves 28.5 MiB beside its first space `alpha` (64 MiB). */
async function budgetRoot(): Promise<LiveRoot> {
  const r = await trackedRoot("cotal-exits-");
  mkdirSync(r.root, { recursive: true, mode: 0o700 });
  const jetstream = { maxFileStore: `${100 * 1024 + 512}K`, reserveFile: "8M", maxMemoryStore: "64M", reserveMemory: "2M" };
  const settings = { format: "cotal.settings/1", host: "127.0.0.1", port: r.port, serverName: `exits-${r.port}`, createdAt: new Date().toISOString(), jetstream };
  writeFileSync(r.layout.settingsFile, `${JSON.stringify(settings, null, 2)}\n`, { mode: 0o600 });
  await upJson(r, ["--space", "alpha"]);
  return r;
}

type Quota = { disk: number; conns: number; subs: number };
async function quotaOf(r: LiveRoot, space: string): Promise<Quota> {
  return parseJson<{ quota: Quota }>(ok(await r.cotal(["space", "limits", space, "--json"]))).quota;
}

describe("printed exits of quota and usage refusals (finding 7)", () => {
  it("quota-overcommit: the next keeps every other flag and the root; with < 1 MiB left it frees budget first, never a value refused again", async () => {
    const r = await budgetRoot();
    const auth = snapshotTree(r.layout.authDir);
    const over = await r.cotal(["space", "add", "d", "--max-disk", "200M", "--max-conns", "5", "--max-subs", "77"]);
    const next = refusedWith(over, "quota-overcommit", 3);
    expect(snapshotTree(r.layout.authDir)).toEqual(auth); // the refusal wrote nothing
    expect(next).toMatch(new RegExp(`^cotal --root ${r.root} space add d --max-disk 28M --max-conns 5 --max-subs 77 `));
    ok(await runPrinted(next));
    expect(await quotaOf(r, "d")).toMatchObject({ disk: 28 * MiB, conns: 5, subs: 77 }); // no flag dropped

    // 512 KiB left, under the 1 MiB a space needs: the old next alternated --max-disk 0 / 1048576
    const starved = await r.cotal(["space", "add", "e", "--max-disk", "10M", "--max-conns", "7"]);
    const free = refusedWith(starved, "quota-overcommit", 3);
    expect(free).not.toMatch(/--max-disk (0|1048576|524288)\b/);
    expect(free).toMatch(new RegExp(`^cotal --root ${r.root} space limits alpha --max-disk 54M && cotal --root ${r.root} space add e --max-disk 10M --max-conns 7 `));
    ok(await runPrinted(free));
    expect(await quotaOf(r, "e")).toMatchObject({ disk: 10 * MiB, conns: 7 });
    expect((await quotaOf(r, "alpha")).disk).toBe(54 * MiB);
    // positive control: the budget still refuses what does not fit
    refusedWith(await r.cotal(["space", "add", "f", "--max-disk", "1G"]), "quota-overcommit", 3);
  }, 180_000);

  it("usage refusals (--max-subs -2, a unit error, an unknown flag) print the command's --help line with the root, which runs as printed", async () => {
    const { r } = await upRoot();
    const auth = snapshotTree(r.layout.authDir);
    for (const [args, code] of [
      [["space", "add", "zed", "--max-subs", "-2"], "invalid-argument"],
      [["space", "add", "zed", "--max-disk", "5XB"], "invalid-argument"],
      [["space", "add", "zed", "--frobnicate"], "usage"],
      [["space", "limits", "alpha", "--max-conns", "x"], "invalid-argument"],
    ] as const) {
      const next = refusedWith(await r.cotal([...args]), code, 2);
      expect(next).toBe(`cotal --root ${r.root} space ${args[1]} --help`);
      const help = await runPrinted(next);
      expect(help.code, help.stderr).toBe(0);
      expect(help.stdout).toContain("--max-subs");
    }
    expect(snapshotTree(r.layout.authDir)).toEqual(auth);
    // positive control: the same command with a good value is admitted
    ok(await r.cotal(["space", "add", "zed", "--max-subs", "5"]));
    expect((await quotaOf(r, "zed")).subs).toBe(5);
  }, 120_000);
});

describe("guards of finding 8", () => {
  it("up --space nosuch on a running root refuses space-not-found, prints no path that does not exist; its next adds the space and re-runs", async () => {
    const { r } = await upRoot();
    const refused = await r.cotal(["up", "--space", "nosuch"]);
    const next = refusedWith(refused, "space-not-found", 5);
    expect(refused.stderr).toContain("space nosuch does not exist");
    for (const p of `${refused.stdout}\n${refused.stderr}`.match(/\/[\w./-]+\.creds\b/g) ?? []) expect(existsSync(p), p).toBe(true);
    expect(next).toMatch(new RegExp(`^cotal --root ${r.root} space add nosuch && cotal --root ${r.root} up --space nosuch$`));
    const followed = await runPrinted(next);
    expect(followed.code, followed.stderr).toBe(0);
    expect(followed.stdout).toMatch(/space: {3}nosuch /);
    const creds = /creds: {3}(\S+)/.exec(followed.stdout)?.[1];
    expect(creds && existsSync(creds), followed.stdout).toBe(true);
    // positive control: an existing space is served as before
    const alpha = parseJson<UpResult>(ok(await r.cotal(["up", "--space", "alpha", "--json"])));
    expect(existsSync(alpha.credsFile)).toBe(true);
  }, 120_000);

  it("space creds --out under a regular file is io (exit 8) naming the path, before any write; its next writes the creds under the root", async () => {
    const { r } = await upRoot();
    const dir = mkdtempSync(join(tmpdir(), "cotal-out-"));
    writeFileSync(join(dir, "file"), "not a directory\n");
    const before = snapshotTree(r.root);
    const out = join(dir, "file", "x.creds");
    const res = await r.cotal(["space", "creds", "alpha", "--user", "bob", "--out", out]);
    const next = refusedWith(res, "io", 8);
    expect(res.stderr).toContain(`${join(dir, "file")} is not a directory`);
    expect(snapshotTree(r.root)).toEqual(before);
    const json = parseJson<{ error: { code: string; details: { path: string } } }>(await r.cotal(["space", "creds", "alpha", "--out", out, "--json"]));
    expect(json.error).toMatchObject({ code: "io", details: { path: out } });
    const followed = await runPrinted(next);
    expect(followed.code, followed.stderr).toBe(0);
    expect(existsSync(r.layout.userCredsFile("alpha", "bob"))).toBe(true);
    // positive control: an --out in a directory is written
    ok(await r.cotal(["space", "creds", "alpha", "--out", join(dir, "ok.creds")]));
    expect(readFileSync(join(dir, "ok.creds"), "utf8")).toContain("BEGIN NATS USER JWT");
  }, 120_000);

  it("a second cotal node run for the same node is refused lock-held naming the running agent's pid, before it touches anything; a dead agent's lock is taken over", async () => {
    const { r, up } = await upCluster();
    const [n1, n2] = up.nodes ?? [];
    if (!n1 || !n2) throw new Error("three nodes expected");
    const first = startAgent(r, n1.name);
    agents.push(first);
    await first.line(/serving generation/, 90_000);
    const stateFile = r.layout.nodeAgentStateFile(n1.name);
    const state = await until("the first agent's state file", () => (existsSync(stateFile) && readFileSync(stateFile, "utf8").includes('"serving"') ? readFileSync(stateFile, "utf8") : undefined), 10_000);
    const second = await r.cotal(["node", "run", "--node", n1.name, "--once"], { timeoutMs: 60_000 });
    const next = refusedWith(second, "lock-held", 4);
    expect(second.stderr).toContain(`pid ${first.child.pid}`);
    expect(readFileSync(stateFile, "utf8")).toBe(state); // it touched nothing
    // positive control: another node's agent runs beside it
    ok(await r.cotal(["node", "run", "--node", n2.name, "--once"], { timeoutMs: 60_000 }));
    // the printed next waits for the first agent, then runs: stop the agent and it succeeds
    const waiting = runPrinted(next);
    await first.stop();
    const followed = await waiting;
    expect(followed.code, followed.stderr).toBe(0);
    // a SIGKILLed agent's lock is stale: the next agent takes it over
    const killed = startAgent(r, n1.name);
    agents.push(killed);
    await killed.line(/serving generation/, 90_000);
    killed.child.kill("SIGKILL");
    await until("the agent gone", () => (killed.child.exitCode !== null || killed.child.signalCode !== null ? true : undefined), 10_000);
    ok(await r.cotal(["node", "run", "--node", n1.name, "--once"], { timeoutMs: 60_000 }));
  }, 240_000);

  it("a full disk (writes fail: ulimit -f 0) refuses io and leaves no lock.json.*.tmp behind", async () => {
    const { r } = await upRoot();
    const temps = (): string[] => readdirSync(r.layout.maintenanceDir).filter((f) => f.endsWith(".tmp"));
    const full = await runPrinted(`ulimit -f 0; exec cotal --root ${r.root} space add beta`);
    refusedWith(full, "io", 8);
    expect(full.stderr).toContain(r.layout.lockFile);
    expect(temps()).toEqual([]);
    expect((await statusOf(r)).inventory?.spaces).toEqual(["alpha"]); // nothing past the lock happened
    // positive control: with room, the same command succeeds and leaves no temp either
    ok(await runPrinted(`cotal --root ${r.root} space add beta`));
    expect(temps()).toEqual([]);
  }, 120_000);

  it("a truncated run/broker.json on a running broker: the printed next adopts the live server (no restart), a connected client sees no disconnect, status is clean", async () => {
    const { r, up } = await upRoot();
    const pid = up.pid;
    const nc: NatsConnection = await connect({ servers: up.url, authenticator: credsAuthenticator(new TextEncoder().encode(await credsText(r, "alpha"))) });
    const events: string[] = [];
    void (async () => {
      for await (const s of nc.status()) events.push(s.type);
    })();
    try {
      const text = readFileSync(r.layout.runtimeFile, "utf8");
      writeFileSync(r.layout.runtimeFile, text.slice(0, Math.floor(text.length / 3)));
      expect(readRuntime(r.layout)).toBeUndefined();
      const refused = await r.cotal(["space", "add", "beta"]);
      const next = refusedWith(refused, "broker-not-running", 6);
      expect(next).not.toMatch(/cotal down/);
      // the add after the adoption reloads; since 2.14.8 a reload keeps JWT clients connected
      const followed = await runPrinted(next);
      expect(followed.code, followed.stderr).toBe(0);
      expect(followed.stdout).toContain(`adopted the running nats-server pid ${pid}`);
      expect(refused.stderr).toContain(`nats-server pid ${pid} serves this root`);
      expect(readRuntime(r.layout)?.owner.pid).toBe(pid);
      const st = await statusOf(r);
      expect(st.state).toBe("clean");
      expect(st.broker).toMatchObject({ running: true, pid, strays: [] });
      expect(st.inventory?.spaces).toEqual(["alpha", "beta"]);
      // positive control: the client is connected and served throughout
      await nc.flush();
      expect(nc.isClosed()).toBe(false);
      expect(events.filter((e) => e === "disconnect" || e === "reconnect")).toEqual([]);
    } finally {
      await nc.close();
    }
  }, 120_000);
});
