// What cotal does differently on current nats-servers (README: Server versions), on whichever server
// this run uses (NATS_SERVER_BIN). Cells a version cannot run are skipped with the reason printed.
import { readFileSync, writeFileSync } from "node:fs";
import { execFile, spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { connect, credsAuthenticator } from "@nats-io/transport-node";
import { harnessTeardown, SurvivorWatcher } from "@cotal/harness";
import { type RootLayout, type SpaceAddResult, type StatusReport } from "@cotal/core";
import { FEATURE_SINCE, configDigest, natsConfigDigest, readRuntime, reloadAndProve } from "@cotal/core/broker";
import { RELOAD_OK, logOffset, natsServerBinary, readLogSince } from "@cotal/core/server-process";
import { loadBrokerTrust } from "@cotal/core/root";
import { mintSystemUserCreds } from "@cotal/core/trust";
import { parseJson } from "../fixtures/live-root.js";
import { connects, credsText, disposeLiveRoots, statusOf, upRoot } from "../fixtures/tenants.js";
import { liveServer, skipReason } from "../fixtures/server-version.js";
import { cell } from "../fixtures/matrix.js";
import { VERSION_DEPENDENT } from "../fixtures/tags.js";

afterEach(disposeLiveRoots);
afterAll(harnessTeardown);

function gate(feature: keyof typeof FEATURE_SINCE): boolean {
  if (!liveServer[feature]) console.log(`[server-versions] ${skipReason(feature, FEATURE_SINCE[feature])}`);
  return liveServer[feature];
}

/** VARZ `config_digest` read on a connection of the test's own (a system user minted here). */
async function varzDigest(url: string, layout: RootLayout): Promise<string | undefined> {
  const user = mintSystemUserCreds(loadBrokerTrust(layout).system, { name: "test-varz", expiresInSeconds: 60 });
  const nc = await connect({ servers: url, authenticator: credsAuthenticator(new TextEncoder().encode(user.creds)), reconnect: false });
  try {
    const msg = await nc.request("$SYS.REQ.SERVER.PING.VARZ", "", { timeout: 3_000 });
    return (JSON.parse(msg.string()) as { data?: { config_digest?: string } }).data?.config_digest;
  } finally {
    await nc.close();
  }
}

function sha256OfConf(layout: RootLayout): string {
  return configDigest(readFileSync(layout.serverConf));
}

describe(`nats-server ${liveServer.version}: reload through $SYS.REQ.SERVER.<id>.RELOAD`, VERSION_DEPENDENT, () => {
  const on = gate("reloadRequest");

  /** Makes the next render change the listen port, which nats-server refuses to reload. */
  function breakPort(layout: RootLayout): () => void {
    const text = readFileSync(layout.settingsFile, "utf8");
    const settings = JSON.parse(text) as { port: number };
    writeFileSync(layout.settingsFile, JSON.stringify({ ...settings, port: settings.port + 1 }));
    return () => writeFileSync(layout.settingsFile, text);
  }

  it.skipIf(!on)("a config the server rejects is reported from the RELOAD reply's error text, rolled back and re-proven", () =>
    cell("RELOAD reply: rejected config", async () => {
      const { r, up } = await upRoot();
      expect((await r.cotal(["space", "add", "beta"])).code).toBe(0);
      const before = await statusOf(r);
      const restore = breakPort(r.layout);
      const offset = logOffset(r.layout.logFile);
      const add = await r.cotal(["space", "add", "gamma"]);
      const log = readLogSince(r.layout.logFile, offset);
      restore();
      expect(add.code, add.stderr).toBe(7);
      // the server's own words, from its reply: the request path never writes a failure line
      expect(add.stderr).toMatch(/nats-server replied: config reload not supported for Port/);
      expect(log).not.toMatch(/Failed to reload server configuration/);
      // the rollback's re-proof: exactly one success line, for the previous config
      expect(log.split(RELOAD_OK).length - 1).toBe(1);
      const after = await statusOf(r);
      expect(after.inventory?.appliedGeneration).toBe(before.inventory?.appliedGeneration);
      expect(after.inventory?.configDigest).toBe(before.inventory?.configDigest);
      expect(after.inventory?.serverConfigDigest).toEqual(before.inventory?.serverConfigDigest);
      expect(after.inventory?.pending).toBeNull();
      if (liveServer.configDigest) expect(await varzDigest(up.url, r.layout)).toBe(before.inventory?.serverConfigDigest?.digest);
      expect(await connects(up.url, await credsText(r, "beta"))).toBe(true);
      // positive control: fixed, the same add goes through
      expect((await r.cotal(["space", "add", "gamma"])).code).toBe(0);
      expect((await statusOf(r)).inventory?.spaces).toEqual(["alpha", "beta", "gamma"]);
    }));

  it.skipIf(!on)("control: with reloads forced to SIGHUP (test-only switch) the rejection is only read from the log", () =>
    cell("RELOAD reply control (SIGHUP forced)", async () => {
      const { r } = await upRoot();
      expect((await r.cotal(["space", "add", "beta"])).code).toBe(0);
      const restore = breakPort(r.layout);
      const offset = logOffset(r.layout.logFile);
      const add = await r.cotal(["space", "add", "gamma"], { env: { COTAL_TEST_UNSAFE_RELOAD_BY_SIGNAL: "1" } });
      const log = readLogSince(r.layout.logFile, offset);
      restore();
      expect(add.code, add.stderr).toBe(7);
      expect(add.stderr).not.toMatch(/nats-server replied/);
      expect(log).toMatch(/Failed to reload server configuration: config reload not supported for Port/);
    }));
});

describe(`nats-server ${liveServer.version}: the server's config_digest beside cotal's byte digest`, VERSION_DEPENDENT, () => {
  const on = gate("configDigest");

  it.skipIf(!on)("cotal predicts the server's config_digest of what it renders: VARZ, and `nats-server -t` for a path that needs Go's escapes", () =>
    cell("config_digest predicted", async () => {
      const { r, up } = await upRoot();
      expect((await r.cotal(["space", "add", "beta"])).code).toBe(0);
      const text = readFileSync(r.layout.serverConf, "utf8");
      expect(natsConfigDigest(text)).toMatch(/^sha256:[0-9a-f]{64}$/);
      expect(natsConfigDigest(text)).toBe(await varzDigest(up.url, r.layout));
      // The same config with a store path holding & < > " \ (escaped by Go's encoder), as the server itself hashes it.
      const odd = text.replace(/^ {2}store_dir: .*$/m, `  store_dir: "${join(r.root, 'odd &<> "q" \\ dir').replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`);
      expect(odd).not.toBe(text);
      const file = join(dirname(r.root), "odd.conf");
      writeFileSync(file, odd);
      const t = spawnSync(natsServerBinary(), ["-t", "-c", file], { encoding: "utf8" });
      expect(t.status, t.stderr).toBe(0);
      const said = /\((sha256:[0-9a-f]{64})\)/.exec(`${t.stdout}${t.stderr}`)?.[1];
      expect(said, t.stderr).toBeDefined();
      expect(natsConfigDigest(odd)).toBe(said);
      expect(said).not.toBe(natsConfigDigest(text));
    }));

  it.skipIf(!on)("the recorded config_digest is the server's (VARZ) and changes exactly when the config did", () =>
    cell("config_digest follows the config", async () => {
      const { r, up } = await upRoot();
      const record = async () => (await statusOf(r)).inventory as NonNullable<StatusReport["inventory"]>;

      expect((await r.cotal(["space", "add", "beta"])).code).toBe(0);
      const one = await record();
      const d1 = one.serverConfigDigest?.digest;
      expect(d1).toMatch(/^sha256:[0-9a-f]{64}$/);
      expect(one.serverConfigDigest?.forConfigDigest).toBe(one.configDigest);
      expect(one.configDigest).toBe(sha256OfConf(r.layout));
      expect(d1).not.toBe(one.configDigest); // the server hashes what it parsed, not the bytes
      expect(await varzDigest(up.url, r.layout)).toBe(d1);

      // the same bytes reloaded twice: the server reports the same digest each time
      const runtime = readRuntime(r.layout);
      if (!runtime) throw new Error("no runtime record");
      for (let i = 0; i < 2; i++) {
        const v = await reloadAndProve(runtime, { layout: r.layout });
        expect(v).toMatchObject({ outcome: "reloaded", via: "request", serverConfigDigest: d1 });
        // before PR #8609 the reload drops the asking connection with its reply; the log line then proves it
        if (liveServer.reloadKeepsJwtClients) expect(v.outcome === "reloaded" && v.notes).toBeFalsy();
        else expect(v.outcome === "reloaded" && v.notes?.join("\n")).toMatch(/RELOAD reply was lost/);
      }

      // another config: another digest, in the record and in VARZ
      expect((await r.cotal(["space", "add", "gamma"])).code).toBe(0);
      const two = await record();
      expect(two.configDigest).not.toBe(one.configDigest);
      expect(two.serverConfigDigest?.forConfigDigest).toBe(two.configDigest);
      expect(two.serverConfigDigest?.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
      expect(two.serverConfigDigest?.digest).not.toBe(d1);
      expect(await varzDigest(up.url, r.layout)).toBe(two.serverConfigDigest?.digest);

      // back to the first config (the render is byte-stable): back to the first digest
      expect((await r.cotal(["space", "rm", "gamma", "--yes"])).code).toBe(0);
      const three = await record();
      expect(three.configDigest).toBe(one.configDigest);
      expect(three.serverConfigDigest).toEqual(one.serverConfigDigest);
      expect(await varzDigest(up.url, r.layout)).toBe(d1);

      // a no-op reloads nothing and records nothing new
      expect((await r.cotal(["space", "add", "beta"])).code).toBe(0);
      expect((await record()).revision).toBe(three.revision);
    }));
});

describe(`nats-server ${liveServer.version}: reloads and connected tenants (nats-server PR #8609)`, VERSION_DEPENDENT, () => {
  const fixed = gate("reloadKeepsJwtClients");
  if (fixed) console.log(`[server-versions] nats-server ${liveServer.version} carries PR #8609: the unfixed-server cell is skipped`);

  /** 100 new spaces in one `space add --from` while watchers hold alpha's (and omega's) connections. */
  async function batchWhileWatching() {
    const { r, up } = await upRoot();
    expect((await r.cotal(["space", "add", "omega"])).code).toBe(0);
    const alpha = await SurvivorWatcher.start({ url: up.url, creds: await credsText(r, "alpha") });
    const omega = await SurvivorWatcher.start({ url: up.url, creds: await credsText(r, "omega") });
    const names = Array.from({ length: 100 }, (_, i) => `b${String(i).padStart(3, "0")}`);
    const file = join(dirname(r.root), "batch.txt");
    writeFileSync(file, `${names.join("\n")}\n`);
    const add = await r.cotal(["space", "add", "--from", file, "--json"], { timeoutMs: 180_000 });
    expect(add.code, add.stderr).toBe(0);
    const res = parseJson<SpaceAddResult>(add);
    expect(res.added.length).toBe(100);
    expect(res.reloads).toBe(1); // the batch really reloaded the broker under the watchers
    await new Promise((res) => setTimeout(res, 300));
    return { r, up, alpha, omega };
  }

  it.skipIf(!fixed)("a tenant's client connected during a 100-space batch add sees 0 disconnects", () =>
    cell("survivor disconnects during a 100-space batch (fixed)", async (m) => {
      const { r, up, alpha, omega } = await batchWhileWatching();
      const drops = alpha.count("disconnect");
      m.notes = [`nats-server ${liveServer.version}: ${drops} disconnect(s) of a connected tenant across a 100-space batch`];
      console.log(`[server-versions] ${m.notes[0]}`);
      expect(drops).toBe(0);
      expect(await alpha.connection.flush().then(() => true)).toBe(true);
      // positive control: the same watcher does see a drop when the broker does close it (omega removed)
      expect((await r.cotal(["space", "rm", "omega", "--yes"])).code).toBe(0);
      await omega.waitFor("disconnect", { timeoutMs: 10_000 });
      expect(alpha.count("disconnect")).toBe(0);
      expect(await connects(up.url, await credsText(r, "alpha"))).toBe(true);
      await Promise.all([alpha.stop(), omega.stop()]);
    }));

  it.skipIf(fixed)("before the fix, the same batch bounces every connected tenant once, and each reconnects by itself", () =>
    cell("survivor disconnects during a 100-space batch (unfixed)", async (m) => {
      const { alpha, omega } = await batchWhileWatching();
      await alpha.waitFor("reconnect", { timeoutMs: 10_000 });
      await omega.waitFor("reconnect", { timeoutMs: 10_000 });
      m.notes = [`nats-server ${liveServer.version}: ${alpha.count("disconnect")} disconnect(s), longest gap ${Math.round(alpha.maxReconnectGapMs())} ms`];
      console.log(`[server-versions] ${m.notes[0]}`);
      expect(alpha.count("disconnect")).toBeGreaterThanOrEqual(1);
      await Promise.all([alpha.stop(), omega.stop()]);
    }));
});

/** The nats CLI: on PATH, else the copy infra/nats-server.sh installs; undefined when neither exists. */
function natsCli(): Promise<string | undefined> {
  const script = fileURLToPath(new URL("../../infra/nats-server.sh", import.meta.url));
  return new Promise((resolve) => {
    execFile("sh", ["-c", "command -v nats"], (err, out) => {
      if (!err && out.trim()) return resolve(out.trim());
      execFile("bash", [script, "cli-path"], (err2, out2) => resolve(err2 ? undefined : out2.trim()));
    });
  });
}

function sh(line: string, pathDir: string): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile("sh", ["-c", line], { env: { ...process.env, PATH: `${pathDir}:${process.env.PATH ?? ""}` }, timeout: 20_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out: `${stdout}${stderr}` }),
    );
  });
}

describe("cotal up's printed try: line", () => {
  it("runs as printed with the nats CLI, and the message arrives", async () => {
    const cli = await natsCli();
    if (!cli) {
      console.log("[server-versions] skipped: no nats CLI (PATH or infra/nats-server.sh install)");
      return;
    }
    await cell("up's try: line with the nats CLI", async () => {
      const { r, up } = await upRoot();
      const printed = await r.cotal(["up", "--space", "alpha"]);
      expect(printed.code, printed.stderr).toBe(0);
      const line = /^\s*try:\s+(.+)$/m.exec(printed.stdout)?.[1];
      expect(line, printed.stdout).toMatch(/^nats /);
      const subject = /pub (\S+) hi$/.exec(line as string)?.[1] as string;
      // an independent subscriber with the same space's creds sees what the printed command sends
      const sub = await connect({ servers: up.url, authenticator: credsAuthenticator(new TextEncoder().encode(await credsText(r, "alpha"))) });
      const got = sub.subscribe(subject, { max: 1 });
      const first = (async () => {
        for await (const msg of got) return msg.string();
        return undefined;
      })();
      await sub.flush();
      const ran = await sh(line as string, dirname(cli));
      expect(ran.code, ran.out).toBe(0);
      const timeout = new Promise<string>((res) => setTimeout(() => res("(nothing within 5 s)"), 5_000));
      expect(await Promise.race([first, timeout])).toBe("hi");
      await sub.close();
      // control: the same line with creds that do not exist fails, so exit 0 above meant something
      const broken = await sh((line as string).replace(/--creds \S+/, "--creds /nonexistent.creds"), dirname(cli));
      expect(broken.code).not.toBe(0);
    });
  });
});
