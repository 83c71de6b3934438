import { spawn } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { freePort, harnessTeardown, natsServerBinary, testGuards } from "@cotal/harness";
import { type StatusReport } from "@cotal/core";
import { serversOfRoot } from "@cotal/core/broker";
import { parseJson } from "../fixtures/live-root.js";
import { connects, credsText, disposeLiveRoots, liveRoots, statusOf, upRoot } from "../fixtures/tenants.js";
import { liveRoot } from "../fixtures/live-root.js";
import { until } from "../fixtures/until.js";

// One server per store, and none that cotal cannot see: a killed `up` or a leaked maintenance
// broker is found by the next verb, shown by status and stopped by down (docs/refusals.md).

afterEach(disposeLiveRoots);
afterAll(harnessTeardown);

describe("stray servers", () => {
  it("a cotal up killed while its server starts: status sees the server, the next up finishes the boot", async () => {
    const r = await liveRoot();
    liveRoots.push(r);
    const killed = await r.cotal(["up", "--detach", "--space", "alpha", "--port", String(r.port)], { env: { COTAL_FAILPOINT: "broker-spawned:kill" } });
    expect(killed.code).not.toBe(0);
    const st = await statusOf(r);
    expect(st.broker.running).toBe(true); // recorded before the readiness wait
    const again = await r.cotal(["up", "--detach"]);
    expect(again.code, again.stderr).toBe(0);
    expect(serversOfRoot(r.layout, testGuards()).filter((s) => s.role === "broker").length).toBe(1);
    const after = await statusOf(r);
    expect(after.state).toBe("clean");
    expect(await connects(`nats://127.0.0.1:${r.port}`, await credsText(r, "alpha"))).toBe(true);
  });

  it("a server with no record: up refuses naming it, the printed down stops it, up starts exactly one", async () => {
    const { r } = await upRoot();
    const pid = JSON.parse(readFileSync(r.layout.runtimeFile, "utf8")).owner.pid as number;
    rmSync(r.layout.runtimeFile); // an older cotal, or a crash between spawn and record
    const st = await statusOf(r);
    expect(st.broker.running).toBe(false);
    expect(st.broker.strays.map((s) => s.pid)).toEqual([pid]);
    const up = await r.cotal(["up", "--detach"]);
    expect(up.code, up.stderr).toBe(6);
    expect(up.stderr).toMatch(/\[broker-running\]/);
    expect(up.stderr).toContain(`pid ${pid}`);
    // The printed way out is `cotal down && <this up>`: its first command stops the stray.
    const printed = (up.stderr.split("\n").find((l) => l.includes("next: ")) ?? "").split("next: ")[1]?.split("#")[0]?.trim() ?? "";
    expect(printed).toMatch(/^cotal (--root \S+ )?down && cotal (--root \S+ )?up --detach\b/);
    const next = (printed.split("&&")[0] ?? "").trim().split(/\s+/);
    const down = await r.cotal([...next.slice(1), "--json"]);
    expect(down.code, down.stderr).toBe(0);
    expect(parseJson<{ strays: number[] }>(down).strays).toEqual([pid]);
    expect(serversOfRoot(r.layout, testGuards())).toEqual([]);
    expect((await r.cotal(["up", "--detach"])).code).toBe(0);
    expect(serversOfRoot(r.layout, testGuards()).length).toBe(1);
    expect((await statusOf(r)).state).toBe("clean");
  });

  it("a maintenance broker leaked by a killed cold up is reaped by the next verb, which boots", async () => {
    const { r } = await upRoot();
    expect((await r.cotal(["down"])).code).toBe(0);
    const killed = await r.cotal(["up", "--detach"], { env: { COTAL_FAILPOINT: "maintenance-started:kill" } });
    expect(killed.code).not.toBe(0);
    const leaked = serversOfRoot(r.layout, testGuards()).filter((s) => s.role === "maintenance");
    expect(leaked.length).toBe(1);
    expect((await statusOf(r)).broker.strays.map((s) => s.role)).toEqual(["maintenance"]);
    const up = await r.cotal(["up", "--detach"]);
    expect(up.code, up.stderr).toBe(0);
    expect(serversOfRoot(r.layout, testGuards()).map((s) => s.role)).toEqual(["broker"]);
    const st: StatusReport = await statusOf(r);
    expect(st.state).toBe("clean");
  });
  // Chaos backup#10 (seed 20261201): a backup killed between spawning its isolated broker and
  // recording it, then cleaned, left a server no journal names; `up` refused naming `cotal down`,
  // and down skipped attempt servers, so the printed way out looped.
  it.each(["up", "down"] as const)("an attempt broker the journal does not record is stopped by %s, the printed way out", async (verb) => {
    const { r } = await upRoot();
    expect((await r.cotal(["down", "--preserve-state"])).code).toBe(0);
    const dir = join(r.layout.maintenanceDir, "attempt-unrecorded");
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    writeFileSync(join(dir, "backup.conf"), `port: ${await freePort()}\nhost: 127.0.0.1\nserver_name: stray\n`, { mode: 0o600 });
    const stray = spawn(await natsServerBinary(), ["-c", join(dir, "backup.conf")], { detached: true, stdio: "ignore" });
    stray.unref();
    await until("the stray to be seen", () => serversOfRoot(r.layout, testGuards()).some((s) => s.pid === stray.pid) || undefined);
    expect((await statusOf(r)).broker.strays.map((s) => s.role)).toEqual(["attempt"]); // positive control: it is there, and unrecorded
    const res = await r.cotal(verb === "up" ? ["up", "--detach"] : ["down"]);
    expect(res.code, res.stderr).toBe(0);
    expect(serversOfRoot(r.layout, testGuards()).some((s) => s.pid === stray.pid)).toBe(false);
    if (verb === "down") expect((await r.cotal(["up", "--detach"])).code).toBe(0);
    expect(serversOfRoot(r.layout, testGuards()).map((s) => s.role)).toEqual(["broker"]);
    expect((await statusOf(r)).state).toBe("clean");
  });
  it("clean restore-attempt stops its attempt's isolated broker even when the journal never recorded it", async () => {
    const { r } = await upRoot();
    expect((await r.cotal(["down", "--preserve-state"])).code).toBe(0);
    const killed = await r.cotal(["space", "backup", "alpha", "--out", join(r.root, "..", "alpha.bak")], { env: { COTAL_FAILPOINT: "backup-started:kill" } });
    expect(killed.code).not.toBe(0);
    const journal = JSON.parse(readFileSync(r.layout.journalFile, "utf8")) as { attempt: { id: string; brokers: unknown[] } };
    const stray = serversOfRoot(r.layout, testGuards()).find((s) => s.role === "attempt");
    expect(stray).toBeDefined(); // positive control: the killed backup left its isolated broker running
    journal.attempt.brokers = []; // as if the kill came between the spawn and its journal record
    writeFileSync(r.layout.journalFile, JSON.stringify(journal), { mode: 0o600 });
    const clean = await r.cotal(["clean", "restore-attempt", "--attempt", journal.attempt.id, "--json"]);
    expect(clean.code, clean.stderr).toBe(0);
    expect(parseJson<{ killed: number[] }>(clean).killed).toContain(stray!.pid);
    expect(serversOfRoot(r.layout, testGuards()).some((s) => s.pid === stray!.pid)).toBe(false);
    expect((await r.cotal(["up", "--detach"])).code).toBe(0);
    expect((await statusOf(r)).state).toBe("clean");
  });
});
