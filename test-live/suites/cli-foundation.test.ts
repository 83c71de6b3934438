import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { jetstreamManager } from "@nats-io/jetstream";
import { harnessTeardown, spawnCotal, tempRoot } from "@cotal/harness";
import { spaceHex, type StatusReport, type UpResult } from "@cotal/core";
import { parseJson, snapshotTree } from "../fixtures/live-root.js";
import { connectCreds, refusal } from "../fixtures/nats.js";
import { disposeLiveRoots, trackedRoot } from "../fixtures/tenants.js";

const SEED = /\bS[OAU][A-Z2-7]{56}\b/;
afterEach(disposeLiveRoots);
afterAll(async () => {
  await harnessTeardown();
});

describe("cotal up / creds / status / down on a real nats-server", () => {
  it("creates a root, serves a space, reports it, refuses nothing on a second up, and stops", async () => {
    const r = await trackedRoot();
    const outputs: string[] = [];
    const up = await r.cotal(["up", "--detach", "--port", String(r.port), "--json"]);
    outputs.push(up.stdout, up.stderr);
    expect(up.code, up.stderr).toBe(0);
    const res = parseJson<UpResult>(up);
    expect(res.created).toBe(true);
    expect(res.space).toBe("default");
    expect(res.url).toBe(`nats://127.0.0.1:${r.port}`);
    expect(existsSync(res.credsFile)).toBe(true);

    // a cred minted by `space creds` connects, publishes into the space's stream, reads it back
    const creds = await r.cotal(["space", "creds", "default", "--user", "alice", "--json"]);
    outputs.push(creds.stdout, creds.stderr);
    expect(creds.code, creds.stderr).toBe(0);
    const { path } = parseJson<{ path: string }>(creds);
    const nc = await connectCreds(res.url, path);
    const jsm = await jetstreamManager(nc);
    const ack = await jsm.jetstream().publish("cotal.default.events.hello", "hi");
    expect(ack.stream).toBe("cotal_events_default");
    expect((await jsm.streams.getMessage("cotal_events_default", { seq: ack.seq }))?.string()).toBe("hi");
    await nc.close();

    const st = await r.cotal(["status", "--json"]);
    outputs.push(st.stdout);
    expect(st.code).toBe(0);
    const report = parseJson<StatusReport>(st);
    expect(report.broker.running).toBe(true);
    expect(report.broker.pid).toBe(res.pid);
    expect(report.state).toBe("clean");
    expect(report.spaces.map((s) => s.name)).toEqual(["default"]);
    expect(report.spaces[0]?.inConfig).toBe(true);

    const before = readFileSync(r.layout.serverConf);
    const again = await r.cotal(["up", "--detach", "--port", String(r.port)]);
    outputs.push(again.stdout, again.stderr);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/already running; nothing changed/);
    expect(readFileSync(r.layout.serverConf).equals(before)).toBe(true);

    const down = await r.cotal(["down"]);
    outputs.push(down.stdout, down.stderr);
    expect(down.code).toBe(0);
    expect(down.stdout).toMatch(new RegExp(`stopped nats-server \\(pid ${res.pid}`));
    expect(await refusal(res.url, path)).toMatch(/ECONNREFUSED|connection refused|CONNECTION_REFUSED/i);
    const after = parseJson<StatusReport>(await r.cotal(["status", "--json"]));
    expect(after.broker.running).toBe(false);
    expect(after.state).toBe("stopped");

    // no seed in any output or log
    for (const text of outputs) expect(text).not.toMatch(SEED);
    for (const f of readdirSync(r.layout.logDir)) expect(readFileSync(join(r.layout.logDir, f), "utf8")).not.toMatch(SEED);
  });

  it("keeps secrets 0600 in 0700 directories", async () => {
    const r = await trackedRoot();
    const up = await r.cotal(["up", "--detach", "--port", String(r.port)]);
    expect(up.code, up.stderr).toBe(0);
    expect((await r.cotal(["space", "creds", "default", "--user", "bob"])).code).toBe(0);
    const tree = snapshotTree(r.root);
    const secretFiles = Object.keys(tree).filter((p) => !p.endsWith("/"));
    expect(secretFiles).toEqual(expect.arrayContaining(["auth/broker.json", "auth/authority.json", `auth/account.${spaceHex("default")}.json`, "auth/broker.secrets/operator.seed", "auth/broker.secrets/system-signing.seed", "server.conf", "settings.json", `space.${spaceHex("default")}/users/bob.creds`]));
    for (const p of secretFiles) expect(`${p} ${tree[p]?.split(" ")[0]}`).toBe(`${p} 600`);
    for (const d of Object.keys(tree).filter((p) => p.endsWith("/"))) expect(`${d} ${tree[d]}`).toBe(`${d} 700`);
    expect((statSync(r.root).mode & 0o777).toString(8)).toBe("700");
  });

  it("--single-space keeps no system signing seed", async () => {
    const r = await trackedRoot();
    const up = await r.cotal(["up", "--detach", "--single-space", "--port", String(r.port), "--json"]);
    expect(up.code, up.stderr).toBe(0);
    expect(parseJson<UpResult>(up).multiSpace).toBe(false);
    expect(existsSync(r.layout.systemSigningSeedFile)).toBe(false);
    expect(existsSync(r.layout.operatorSeedFile)).toBe(true);
  });
});

describe("refusals change nothing", () => {
  const BAD = ["", "a".repeat(65), "Alpha", "a b", "../x", "x}", "a\nb", "café"];

  it.each(BAD)("invalid space name %j is refused before any write", async (name) => {
    const tmp = await tempRoot("cotal-badname-");
    const rootDir = join(tmp.path, ".cotal");
    const beforeFresh = snapshotTree(tmp.path);
    const { runCotal } = await import("@cotal/harness");
    const fresh = await runCotal(["up", "--detach", "--space", name], { root: rootDir });
    expect(fresh.code).toBe(2);
    expect(fresh.stderr).toMatch(/invalid space name/);
    expect(fresh.stderr).toMatch(/next: /);
    expect(snapshotTree(tmp.path)).toEqual(beforeFresh);
    await tmp.cleanup();
  });

  it("invalid names on an existing root leave it byte-identical", async () => {
    const r = await trackedRoot();
    expect((await r.cotal(["up", "--detach", "--port", String(r.port)])).code).toBe(0);
    expect((await r.cotal(["down"])).code).toBe(0);
    const before = snapshotTree(r.root);
    for (const name of BAD) {
      const up = await r.cotal(["up", "--detach", "--space", name]);
      expect(up.code, `up --space ${JSON.stringify(name)}`).toBe(2);
      const creds = await r.cotal(["space", "creds", name]);
      expect(creds.code, `space creds ${JSON.stringify(name)}`).toBe(2);
    }
    expect(snapshotTree(r.root)).toEqual(before);
  });

  it("a corrupt account record makes up refuse, naming the file and what to do; nothing is rendered", async () => {
    const r = await trackedRoot();
    expect((await r.cotal(["up", "--detach", "--port", String(r.port)])).code).toBe(0);
    expect((await r.cotal(["down"])).code).toBe(0);
    const corruptPath = r.layout.accountFile("ghost");
    writeFileSync(corruptPath, "{ not json", { mode: 0o600 });
    const conf = readFileSync(r.layout.serverConf);
    const up = await r.cotal(["up", "--detach"]);
    expect(up.code).toBe(3);
    expect(up.stderr).toContain(corruptPath);
    expect(up.stderr).toMatch(/\[corrupt-record\]/);
    expect(up.stderr).toMatch(/next: repair or move aside/);
    expect(readFileSync(r.layout.serverConf).equals(conf)).toBe(true);
    const st = parseJson<StatusReport>(await r.cotal(["status", "--json"]));
    expect(st.broker.running).toBe(false);
    expect(st.state).toBe("uncertain");
    expect(st.corrupt.map((c) => c.path)).toEqual([corruptPath]);
    // positive control: moving the record aside lets the same root come up
    const { rmSync } = await import("node:fs");
    rmSync(corruptPath);
    expect((await r.cotal(["up", "--detach"])).code).toBe(0);
  });

  it("two concurrent ups on one root: one wins, the other refuses naming the lock owner", async () => {
    const r = await trackedRoot();
    const first = spawnCotal(["up", "--detach", "--port", String(r.port)], { root: r.root, env: { COTAL_FAILPOINT: "up-locked:sleep:3000" } });
    const firstExit = new Promise<number | null>((res) => first.on("exit", (c) => res(c)));
    const deadline = Date.now() + 10_000;
    while (!existsSync(r.layout.lockFile) && Date.now() < deadline) await new Promise((res) => setTimeout(res, 20));
    const second = await r.cotal(["up", "--detach", "--port", String(r.port)]);
    expect(second.code).toBe(4);
    expect(second.stderr).toMatch(new RegExp(`locked by pid ${first.pid} `));
    expect(second.stderr).toMatch(/\[lock-held\]/);
    expect(second.stderr).toContain(`next: while kill -0 ${first.pid} 2>/dev/null; do sleep 1; done; cotal --root ${r.root} up --detach --port ${r.port}`);
    expect(await firstExit).toBe(0);
    const st = parseJson<StatusReport>(await r.cotal(["status", "--json"]));
    expect(st.broker.running).toBe(true);
    expect(st.lock).toBeNull();
  });
});
