import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { JetStreamApiError, jetstreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { harnessTeardown } from "@cotal/harness";
import { decodeJwt } from "@cotal/core/trust";
import { parseJson, snapshotTree, type LiveRoot } from "../fixtures/live-root.js";
import { connectCreds } from "../fixtures/nats.js";
import { ok, upJson } from "../fixtures/space-data.js";
import { credsText, disposeLiveRoots, FAILPOINT_EXIT, trackedRoot } from "../fixtures/tenants.js";
import { VERSION_DEPENDENT } from "../fixtures/tags.js";

// Issue 11 finding 3: one tenant at its quota starves no sibling and not the authority account.
// The broker gets a small server-wide JetStream max (settings.json "jetstream", docs/quotas.md):
// 100 MiB, 8 MiB of it reserved; the first space takes the default 64 MiB, A and B 8 MiB each.

const MiB = 1024 ** 2;
const BUDGET = { maxFileStore: "100M", maxMemoryStore: "16M", reserveFile: "8M", reserveMemory: "2M" };
const SMALL = ["--max-disk", "8M", "--max-mem", "1M"];
const UNSAFE = { COTAL_TEST_UNSAFE_UNLIMITED_TENANTS: "1" };
/** nats-server's JSAccountResourcesExceededErr: the account's own quota refused the write. */
const ACCOUNT_QUOTA = 10002;
/** nats-server's JSInsufficientResourcesErr: the server-wide max refused the write. */
const SERVER_FULL = 10023;

afterEach(disposeLiveRoots);
afterAll(async () => {
  await harnessTeardown();
});

/** A root whose settings carry the small budget, written before `up` creates the rest. */
async function budgetRoot(): Promise<LiveRoot> {
  const r = await trackedRoot("cotal-quotas-");
  mkdirSync(r.root, { recursive: true, mode: 0o700 });
  const settings = { format: "cotal.settings/1", host: "127.0.0.1", port: r.port, serverName: `quotas-${r.port}`, createdAt: new Date().toISOString(), jetstream: BUDGET };
  writeFileSync(r.layout.settingsFile, `${JSON.stringify(settings, null, 2)}\n`, { mode: 0o600 });
  await upJson(r);
  return r;
}

function errCode(err: unknown): number | string {
  if (err instanceof JetStreamApiError) return err.code;
  return (err as Error).message;
}

/**
 * Puts values into the space's state bucket, 512 KiB first and smaller after each refusal, until
 * even a 64 B value is refused; returns that refusal's code and the account's storage use.
 */
async function fill(url: string, creds: string, space: string): Promise<{ code: number | string; used: number; puts: number }> {
  const nc = await connectCreds(url, creds);
  try {
    const kv = await new Kvm(nc).open(`cotal_state_${space}`);
    let puts = 0;
    let code: number | string = "no refusal";
    for (const size of [512 * 1024, 32 * 1024, 2 * 1024, 64]) {
      const value = new Uint8Array(size).fill(7);
      for (;;) {
        if (puts > 1_000) throw new Error(`space ${space} took ${puts} writes without a refusal`);
        try {
          await kv.put(`fill.${puts++}`, value);
        } catch (err) {
          code = errCode(err);
          break;
        }
      }
    }
    const used = (await (await jetstreamManager(nc)).getAccountInfo()).storage;
    return { code, used, puts };
  } finally {
    await nc.close();
  }
}

/** One small KV write and its read-back from the space's state bucket; the refusal code if refused. */
async function smallWrite(url: string, creds: string, space: string): Promise<true | number | string> {
  const nc = await connectCreds(url, creds);
  try {
    const kv = await new Kvm(nc).open(`cotal_state_${space}`);
    await kv.put("still.writes", "yes");
    expect((await kv.get("still.writes"))?.string()).toBe("yes");
    return true;
  } catch (err) {
    return errCode(err);
  } finally {
    await nc.close();
  }
}

function diskLimitOf(r: LiveRoot, space: string): number {
  const rec = JSON.parse(readFileSync(r.layout.accountFile(space), "utf8")) as { jwt: string; limits: { disk_storage: number } };
  const signed = (decodeJwt(rec.jwt).nats.limits as { disk_storage: number }).disk_storage;
  expect(rec.limits.disk_storage).toBe(signed);
  return signed;
}

describe("quotas: a tenant at its quota starves no one (issue 11 finding 3)", () => {
  it("A is refused at its quota by the server; B still writes; space add still works; overcommit is refused before any write", async () => {
    const r = await budgetRoot();
    const url = `nats://127.0.0.1:${r.port}`;
    expect(readFileSync(r.layout.serverConf, "utf8")).toMatch(/max_file_store: 104857600\n {2}max_memory_store: 16777216\n/);
    ok(await r.cotal(["space", "add", "a", ...SMALL]));
    ok(await r.cotal(["space", "add", "b", ...SMALL]));
    expect(diskLimitOf(r, "a")).toBe(8 * MiB);
    const [credsA, credsB] = [await credsText(r, "a", "tester"), await credsText(r, "b", "tester")];

    const full = await fill(url, credsA, "a");
    expect(full.code).toBe(ACCOUNT_QUOTA); // the account's quota fired, not the server-wide max
    expect(full.used).toBeLessThanOrEqual(8 * MiB);
    expect(full.used).toBeGreaterThan(7 * MiB);
    expect(await smallWrite(url, credsA, "a")).toBe(ACCOUNT_QUOTA); // and it keeps firing

    // positive: the sibling and the authority account are untouched by A's exhaustion
    expect(await smallWrite(url, credsB, "b")).toBe(true);
    ok(await r.cotal(["space", "add", "c", ...SMALL]));
    expect(await smallWrite(url, await credsText(r, "c", "tester"), "c")).toBe(true);

    // bad input and overcommit change nothing; the overcommit's next: line is runnable as printed
    const before = snapshotTree(r.layout.authDir);
    const conf = readFileSync(r.layout.serverConf);
    const bad = await r.cotal(["space", "add", "d", "--max-disk", "1.5G"]);
    expect(bad.code, bad.stderr).toBe(2);
    const over = await r.cotal(["space", "add", "d", "--max-disk", "40M", "--json"]);
    expect(over.code, over.stdout).toBe(3);
    const refused = parseJson<{ error: { code: string; message: string; next: string } }>(over).error;
    expect(refused.code).toBe("quota-overcommit");
    expect(refused.message).toMatch(/disk quotas would total 128 MiB .* over the 92 MiB tenants may claim/);
    const text = await r.cotal(["space", "add", "d", "--max-disk", "40M"]);
    expect(text.code).toBe(3);
    expect(text.stderr).toContain(`next: ${refused.next.replace(" --json", "")}`); // the operator's own line, each time
    expect(snapshotTree(r.layout.authDir)).toEqual(before);
    expect(readFileSync(r.layout.serverConf).equals(conf)).toBe(true);
    const next = refused.next.split("#")[0]?.trim();
    // the refused command with only --max-disk lowered to what fits, its root named (issue #28)
    expect(next).toBe(`cotal --root ${r.root} space add d --max-disk 4M --json`);
    const free = 92 * MiB - 64 * MiB - 3 * 8 * MiB;
    ok(await r.cotal((next as string).split(" ").slice(1)));
    expect(diskLimitOf(r, "d")).toBe(free);
    const list = parseJson<{ spaces: { name: string }[] }>(ok(await r.cotal(["space", "list", "--json"])));
    expect(list.spaces.map((s) => s.name).sort()).toEqual(["a", "b", "c", "d", "default"]);
  }, 180_000);

  it("positive control: with COTAL_TEST_UNSAFE_UNLIMITED_TENANTS=1, the same fill starves B and `space add`", async () => {
    const r = await budgetRoot();
    const url = `nats://127.0.0.1:${r.port}`;
    ok(await r.cotal(["space", "add", "a", ...SMALL], { env: UNSAFE }));
    ok(await r.cotal(["space", "add", "b", ...SMALL]));
    expect(diskLimitOf(r, "a")).toBe(-1); // the switch minted an unbounded tenant
    const [credsA, credsB] = [await credsText(r, "a", "tester"), await credsText(r, "b", "tester")];

    const full = await fill(url, credsA, "a");
    expect(full.code).toBe(SERVER_FULL); // no quota: only the server-wide max stopped A
    expect(full.used).toBeGreaterThan(8 * MiB);

    // the guard's assertions go red: B is refused and the authority account cannot take the lease
    expect(await smallWrite(url, credsB, "b")).toBe(SERVER_FULL);
    const add = await r.cotal(["space", "add", "c", ...SMALL], { timeoutMs: 90_000 });
    expect(add.code, `${add.stdout}\n${add.stderr}`).not.toBe(0);
    expect(add.stderr).toMatch(/cannot acquire the writer lease/); // the authority account was starved
    expect(add.stderr).toMatch(/unbounded storage can still starve the others: a/); // and cotal said so
    const list = parseJson<{ spaces: { name: string }[] }>(await r.cotal(["space", "list", "--json"]));
    expect(list.spaces.map((s) => s.name)).not.toContain("c");
  }, 240_000);
});

interface LimitsShow {
  space: string;
  quota: { disk: number; conns: number };
}
interface Status {
  inventory: { generation: number; pending: null | { op: string; limits?: { space: string; from: string; to: string } } } | null;
}

describe("cotal space limits: a quota changed through the saga", () => {
  it("raises a full tenant's quota (re-signed JWT, proven reload); an overcommit and bad input change nothing", async () => {
    const r = await budgetRoot();
    const url = `nats://127.0.0.1:${r.port}`;
    ok(await r.cotal(["space", "add", "a", ...SMALL]));
    ok(await r.cotal(["space", "add", "b", ...SMALL]));
    const credsA = await credsText(r, "a", "tester");
    expect((await fill(url, credsA, "a")).code).toBe(ACCOUNT_QUOTA); // positive: A is at its quota

    const gen = parseJson<Status>(ok(await r.cotal(["status", "--json"]))).inventory?.generation ?? 0;
    const oldJwt = (JSON.parse(readFileSync(r.layout.accountFile("a"), "utf8")) as { jwt: string }).jwt;
    const changed = parseJson<{ outcome: string; generation: number; reloads: number }>(ok(await r.cotal(["space", "limits", "a", "--max-disk", "16M", "--json"])));
    expect(changed).toMatchObject({ outcome: "committed", generation: gen + 1, reloads: 1 });
    expect(diskLimitOf(r, "a")).toBe(16 * MiB);
    const newJwt = (JSON.parse(readFileSync(r.layout.accountFile("a"), "utf8")) as { jwt: string }).jwt;
    expect(decodeJwt(newJwt).sub).toBe(decodeJwt(oldJwt).sub); // the same account, re-signed
    expect(readFileSync(r.layout.serverConf, "utf8")).toContain(newJwt);
    expect(await smallWrite(url, credsA, "a")).toBe(true); // the server enforces the new quota
    expect(parseJson<LimitsShow>(ok(await r.cotal(["space", "limits", "a", "--json"]))).quota.disk).toBe(16 * MiB);

    const before = snapshotTree(r.layout.authDir);
    const conf = readFileSync(r.layout.serverConf);
    const over = await r.cotal(["space", "limits", "a", "--max-disk", "60M", "--json"]);
    expect(over.code, over.stdout).toBe(3);
    const refused = parseJson<{ error: { code: string; next: string } }>(over).error;
    expect(refused.code).toBe("quota-overcommit");
    expect(refused.next).toMatch(new RegExp(`^cotal --root \\S+ space limits a --max-disk ${(92 * MiB - 64 * MiB - 8 * MiB) / MiB}M `));
    expect((await r.cotal(["space", "limits", "a", "--max-disk", "lots"])).code).toBe(2);
    expect((await r.cotal(["space", "limits", "a", "--max-disk", "-1"])).code).toBe(2);
    expect((await r.cotal(["space", "limits", "nope", "--max-conns", "5"])).code).toBe(5);
    expect(snapshotTree(r.layout.authDir)).toEqual(before);
    expect(readFileSync(r.layout.serverConf).equals(conf)).toBe(true);
    const noop = parseJson<{ outcome: string }>(ok(await r.cotal(["space", "limits", "a", "--max-disk", "16M", "--json"])));
    expect(noop.outcome).toBe("noop");
  }, 180_000);

  it("crash after the record is re-signed: a resume rolls the record back from the claim; a re-run resumes, then applies its own change", async () => {
    const r = await budgetRoot();
    ok(await r.cotal(["space", "add", "a", ...SMALL]));
    const oldJwt = (JSON.parse(readFileSync(r.layout.accountFile("a"), "utf8")) as { jwt: string }).jwt;
    const conf = readFileSync(r.layout.serverConf);
    const crash = await r.cotal(["space", "limits", "a", "--max-disk", "16M"], { env: { COTAL_FAILPOINT: "after-materialise:exit" } });
    expect(crash.code, crash.stderr).toBe(FAILPOINT_EXIT);
    const pending = parseJson<Status>(ok(await r.cotal(["status", "--json"]))).inventory?.pending;
    expect(pending?.op).toBe("limits");
    expect(pending?.limits?.space).toBe("a");
    expect(pending?.limits?.from).toBe(oldJwt);
    expect(diskLimitOf(r, "a")).toBe(16 * MiB); // written, never promoted
    expect(readFileSync(r.layout.serverConf).equals(conf)).toBe(true);

    // any writer's resume (here: `up` on the running root) rolls the record file back to the claim's `from`
    await upJson(r);
    expect(parseJson<Status>(ok(await r.cotal(["status", "--json"]))).inventory?.pending).toBeNull();
    expect((JSON.parse(readFileSync(r.layout.accountFile("a"), "utf8")) as { jwt: string }).jwt).toBe(oldJwt);
    expect(diskLimitOf(r, "a")).toBe(8 * MiB);

    // and a re-run that finds the claim still standing resumes it first, then applies its own change
    expect((await r.cotal(["space", "limits", "a", "--max-disk", "16M"], { env: { COTAL_FAILPOINT: "after-materialise:exit" } })).code).toBe(FAILPOINT_EXIT);
    ok(await r.cotal(["space", "limits", "a", "--max-disk", "12M"]));
    expect(diskLimitOf(r, "a")).toBe(12 * MiB);
    const st = parseJson<Status>(ok(await r.cotal(["status", "--json"])));
    expect(st.inventory?.pending).toBeNull();
    expect(readFileSync(r.layout.serverConf, "utf8")).not.toContain(oldJwt);
  }, 180_000);

  it("crash after promotion: the re-run completes the change forward and the server enforces it", async () => {
    const r = await budgetRoot();
    const url = `nats://127.0.0.1:${r.port}`;
    ok(await r.cotal(["space", "add", "a", ...SMALL]));
    const credsA = await credsText(r, "a", "tester");
    expect((await fill(url, credsA, "a")).code).toBe(ACCOUNT_QUOTA);
    const crash = await r.cotal(["space", "limits", "a", "--max-disk", "16M"], { env: { COTAL_FAILPOINT: "after-rename:exit" } });
    expect(crash.code, crash.stderr).toBe(FAILPOINT_EXIT);
    expect(await smallWrite(url, credsA, "a")).toBe(ACCOUNT_QUOTA); // promoted, not reloaded: the old quota still holds

    const again = parseJson<{ outcome: string }>(ok(await r.cotal(["space", "limits", "a", "--max-disk", "16M", "--json"])));
    expect(again.outcome).toBe("noop"); // the resumed claim already made it so
    expect(parseJson<Status>(ok(await r.cotal(["status", "--json"]))).inventory?.pending).toBeNull();
    expect(diskLimitOf(r, "a")).toBe(16 * MiB);
    expect(await smallWrite(url, credsA, "a")).toBe(true);
  }, 180_000);

  it("positive control: with COTAL_TEST_UNSAFE_KEEP_LIMITS_RECORD=1 the rollback leaves a record the server does not enforce", async () => {
    const r = await budgetRoot();
    const url = `nats://127.0.0.1:${r.port}`;
    ok(await r.cotal(["space", "add", "a", ...SMALL]));
    const oldJwt = (JSON.parse(readFileSync(r.layout.accountFile("a"), "utf8")) as { jwt: string }).jwt;
    expect((await r.cotal(["space", "limits", "a", "--max-disk", "16M"], { env: { COTAL_FAILPOINT: "after-materialise:exit" } })).code).toBe(FAILPOINT_EXIT);
    ok(await r.cotal(["up", "--detach", "--port", String(r.port), "--json"], { env: { COTAL_TEST_UNSAFE_KEEP_LIMITS_RECORD: "1" } }));
    expect(parseJson<Status>(ok(await r.cotal(["status", "--json"]))).inventory?.pending).toBeNull();
    // the guarded cell's assertion goes red: the record says 16 MiB, the running config still signs 8 MiB
    expect((JSON.parse(readFileSync(r.layout.accountFile("a"), "utf8")) as { jwt: string }).jwt).not.toBe(oldJwt);
    expect(diskLimitOf(r, "a")).toBe(16 * MiB);
    expect(readFileSync(r.layout.serverConf, "utf8")).toContain(oldJwt);
    expect((await fill(url, await credsText(r, "a", "tester"), "a")).used).toBeLessThanOrEqual(8 * MiB);
  }, 180_000);
});

describe("the server-wide max a running broker booted with", VERSION_DEPENDENT, () => {
  /** settings.json's budget lowered to 96 MiB under a broker that booted with 100 MiB. */
  async function lowered(): Promise<LiveRoot> {
    const r = await budgetRoot();
    ok(await r.cotal(["space", "add", "a", ...SMALL]));
    ok(await r.cotal(["space", "add", "b", ...SMALL]));
    const settings = JSON.parse(readFileSync(r.layout.settingsFile, "utf8")) as { jetstream: Record<string, string> };
    settings.jetstream.maxFileStore = "96M";
    writeFileSync(r.layout.settingsFile, `${JSON.stringify(settings, null, 2)}\n`, { mode: 0o600 });
    return r;
  }

  it("is kept by live renders (nats-server cannot reload it); settings.json's takes effect at the next cold start", async () => {
    const r = await lowered();
    const add = ok(await r.cotal(["space", "add", "c", ...SMALL]));
    expect(add.stderr).toMatch(/the running broker keeps 100 MiB disk .* until a cold start/);
    expect(readFileSync(r.layout.serverConf, "utf8")).toContain("max_file_store: 104857600");
    // admission already obeys the lower of the two: 64 + 3 × 8 MiB fill 96 − 8 MiB exactly
    const over = await r.cotal(["space", "add", "d", "--max-disk", "1M", "--json"]);
    expect(parseJson<{ error: { code: string } }>(over).error.code).toBe("quota-overcommit");
    ok(await r.cotal(["down"]));
    await upJson(r);
    expect(readFileSync(r.layout.serverConf, "utf8")).toContain("max_file_store: 100663296");
  }, 180_000);

  it("positive control: with COTAL_TEST_UNSAFE_RENDER_SETTINGS_MAX=1 the live render changes it and the reload is refused", async () => {
    const r = await lowered();
    const conf = readFileSync(r.layout.serverConf);
    const add = await r.cotal(["space", "add", "c", ...SMALL, "--json"], { env: { COTAL_TEST_UNSAFE_RENDER_SETTINGS_MAX: "1" } });
    expect(add.code, add.stdout).toBe(7);
    expect(parseJson<{ error: { code: string; message: string } }>(add).error).toMatchObject({ code: "reload-unproven", message: expect.stringMatching(/jetstream/i) });
    expect(readFileSync(r.layout.serverConf).equals(conf)).toBe(true); // rolled back, proven
    const list = parseJson<{ spaces: { name: string }[] }>(ok(await r.cotal(["space", "list", "--json"])));
    expect(list.spaces.map((s) => s.name)).not.toContain("c");
  }, 180_000);
});
