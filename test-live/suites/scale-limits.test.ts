import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { harnessTeardown } from "@cotal/harness";
import { brokerState, type StatusReport } from "@cotal/core";
import { liveRoot, parseJson, snapshotTree, type LiveRoot } from "../fixtures/live-root.js";
import { ok, upJson } from "../fixtures/space-data.js";
import { VERSION_DEPENDENT } from "../fixtures/tags.js";

// Issue 15: past the broker's open-file limit nats-server fails stream creation mid-provisioning,
// after the saga trusted the batch. The running broker's limit is lowered with prlimit(1) (the
// same syscall a LimitNOFILE= unit sets at start), so a 70-space batch (420 fds on 2.9.10) cannot fit and 5 can.

const LOW_NOFILE = 400;
const roots: LiveRoot[] = [];
afterEach(async () => {
  await Promise.all(roots.splice(0).map((r) => r.dispose()));
});
afterAll(async () => {
  await harnessTeardown();
});

async function lowLimitRoot(): Promise<LiveRoot> {
  const r = await liveRoot("cotal-fd-");
  roots.push(r);
  await upJson(r);
  const st = brokerState(r.layout);
  if (!st.running) throw new Error("broker not running after up");
  execFileSync("prlimit", ["--pid", String(st.runtime.owner.pid), `--nofile=${LOW_NOFILE}:${LOW_NOFILE}`]);
  expect(readFileSync(`/proc/${st.runtime.owner.pid}/limits`, "utf8")).toMatch(new RegExp(`Max open files\\s+${LOW_NOFILE}\\s+${LOW_NOFILE}`));
  return r;
}

const names = (prefix: string, n: number): string[] => Array.from({ length: n }, (_, i) => `${prefix}${i}`);

async function inventoryOf(r: LiveRoot): Promise<{ revision: number; spaces: string[] }> {
  const s = parseJson<StatusReport>(await r.cotal(["status", "--json"]));
  if (!s.inventory) throw new Error(`no inventory: ${s.inventoryError}`);
  return { revision: s.inventory.revision, spaces: s.inventory.spaces };
}

describe("file-descriptor budget", VERSION_DEPENDENT, () => {
  it("a batch that cannot fit in the broker's open files is refused before any write (fd-budget)", async () => {
    const r = await lowLimitRoot();
    const before = { auth: snapshotTree(r.layout.authDir), conf: readFileSync(r.layout.serverConf, "utf8"), kv: await inventoryOf(r) };
    const res = await r.cotal(["space", "add", ...names("big", 70), "--json"]);
    expect(res.code, res.stderr).toBe(3);
    const err = parseJson<{ error: { code: string; message: string; details: { limit: number; needed: number; room: number } } }>(res).error;
    expect(err.code).toBe("fd-budget");
    expect(err.details.limit).toBe(LOW_NOFILE);
    expect(err.details.needed).toBeGreaterThan(LOW_NOFILE);
    expect(err.message).toContain(`may open ${LOW_NOFILE}`);
    const human = await r.cotal(["space", "add", ...names("big", 70)]);
    expect(human.stderr).toMatch(/LimitNOFILE=\d+/);
    expect(human.stderr).toMatch(/ulimit -n \d+/);
    expect(snapshotTree(r.layout.authDir)).toEqual(before.auth);
    expect(readFileSync(r.layout.serverConf, "utf8")).toBe(before.conf);
    expect(await inventoryOf(r)).toEqual(before.kv);
  });

  it("positive control: a batch that fits under the same low limit is added and provisioned", async () => {
    const r = await lowLimitRoot();
    ok(await r.cotal(["space", "add", ...names("small", 5), "--json"]));
    const kv = await inventoryOf(r);
    expect(kv.spaces).toEqual(expect.arrayContaining(names("small", 5)));
    const st = parseJson<StatusReport>(await r.cotal(["status", "--json"]));
    expect(st.provisioningOwed).toEqual([]);
  });
});

// A claim carries the whole next list, so a big batch can outgrow one message. The root renders a
// small max_payload (settings.json "maxPayload") so a 500-space batch cannot fit and 5 can.
const SMALL_PAYLOAD = 8192;

async function smallPayloadRoot(): Promise<LiveRoot> {
  const r = await liveRoot("cotal-payload-");
  roots.push(r);
  mkdirSync(r.root, { recursive: true, mode: 0o700 });
  const settings = { format: "cotal.settings/1", host: "127.0.0.1", port: r.port, serverName: `payload-${r.port}`, createdAt: new Date().toISOString(), maxPayload: SMALL_PAYLOAD };
  writeFileSync(r.layout.settingsFile, `${JSON.stringify(settings, null, 2)}\n`, { mode: 0o600 });
  await upJson(r);
  expect(readFileSync(r.layout.serverConf, "utf8")).toContain(`max_payload: ${SMALL_PAYLOAD}\n`);
  return r;
}

describe("inventory record size guard", () => {
  it("a claim larger than the broker's max_payload is refused before any write (record-too-large), never a conflict", async () => {
    const r = await smallPayloadRoot();
    const before = { auth: snapshotTree(r.layout.authDir), conf: readFileSync(r.layout.serverConf, "utf8"), kv: await inventoryOf(r) };
    const res = await r.cotal(["space", "add", ...names("wide", 500), "--json"]);
    expect(res.code, res.stderr).toBe(3);
    const err = parseJson<{ error: { code: string; details: { bytes: number; maxPayload: number } } }>(res).error;
    expect(err.code).toBe("record-too-large");
    expect(err.details.maxPayload).toBe(SMALL_PAYLOAD);
    expect(err.details.bytes).toBeGreaterThan(SMALL_PAYLOAD);
    expect(snapshotTree(r.layout.authDir)).toEqual(before.auth);
    expect(readFileSync(r.layout.serverConf, "utf8")).toBe(before.conf);
    expect(await inventoryOf(r)).toEqual(before.kv);
  });

  it("positive control: a small batch fits; raising maxPayload is rendered and reloaded live, and then the big batch fits", async () => {
    const r = await smallPayloadRoot();
    ok(await r.cotal(["space", "add", ...names("few", 5), "--json"]));
    const settings = JSON.parse(readFileSync(r.layout.settingsFile, "utf8")) as Record<string, unknown>;
    writeFileSync(r.layout.settingsFile, `${JSON.stringify({ ...settings, maxPayload: 1024 ** 2 }, null, 2)}\n`, { mode: 0o600 });
    ok(await r.cotal(["space", "add", "one-more", "--json"]));
    expect(readFileSync(r.layout.serverConf, "utf8")).toContain(`max_payload: ${1024 ** 2}\n`);
    expect(readFileSync(r.layout.logFile, "utf8")).toContain(`max_payload = ${1024 ** 2}`);
    ok(await r.cotal(["space", "add", ...names("wide", 500), "--json"]));
    expect((await inventoryOf(r)).spaces).toEqual(expect.arrayContaining(names("wide", 500)));
  });
});
