import { readFileSync, statSync, writeFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AckPolicy, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { CredentialPoller, harnessTeardown, monotonicMs, testGuards } from "@cotal/harness";
import { type SpaceRmResult, type UpResult } from "@cotal/core";
import { type Guards, type GuardSwitch } from "@cotal/core/light";
import { INVENTORY_BUCKET, LEASE_BUCKET } from "@cotal/core/inventory";
import { evictAccountConnections, evictorCredsFile, mintTeardownCreds, templateStreamNames } from "@cotal/core/provision";
import { loadAuthorityAccount, loadBrokerTrust, loadSpaceAccount } from "@cotal/core/root";
import { decodeJwt, evictorPermissions, mintObserverCreds, mintUserCreds, observerIsCurrent, parseCreds } from "@cotal/core/trust";
import { parseJson, type LiveRoot } from "../fixtures/live-root.js";
import { cell } from "../fixtures/matrix.js";
import { attempt, client, reportIsolation, rowPasses, sleep, type Client, type IsolationRow, type Outcome } from "../fixtures/isolation.js";
import { disposeLiveRoots, upRoot } from "../fixtures/tenants.js";
import { ok } from "../fixtures/space-data.js";
import { VERSION_DEPENDENT } from "../fixtures/tags.js";

// docs/lifecycle.md "Minted users" / issue 11: one root with tenants alpha (A) and beta (B). Every attempt by one of A's creds
// on B, on $SYS data about B, on the authority account or on others' replies is refused, while B's
// own cred doing the same succeeds (the positive control of each row). Printed as a table.

interface Creds {
  user: string;
  admin: string;
  observer: string;
}

let r: LiveRoot;
let up: UpResult;
let A: Creds;
let B: Creds;
let keyA: string;
let keyB: string;
let authorityCreds: string;
let resident: Client; // a long-lived B connection: the data a leak would expose
const rows: IsolationRow[] = [];
const clients: Client[] = [];

async function as(creds: string, name: string): Promise<Client> {
  const c = await client(up.url, creds, name);
  clients.push(c);
  return c;
}

async function spaceCreds(space: string, args: string[], env: Record<string, string> = {}): Promise<string> {
  const res = ok(await r.cotal(["space", "creds", space, ...args, "--json"], { env }));
  const { path } = parseJson<{ path: string }>(res);
  expect(statSync(path).mode & 0o777).toBe(0o600);
  return readFileSync(path, "utf8");
}

/** Runs in-process with one test-only switch on, over the guards this run's environment names. */
function withSwitch<T>(sw: GuardSwitch, fn: (guards: Guards) => T): T {
  return fn({ ...testGuards(), [sw]: true });
}

/** Throws the permission violation the server sent for this attempt, if any, else `fallback`. */
function refused(c: Client, before: number, fallback: string): Error {
  const v = c.errors.slice(before).find((e) => /permission/i.test(e));
  return new Error(v ?? fallback);
}

// ---- the attempts: each resolves with what it reached, or throws the refusal that stopped it ----

const seen: string[] = [];
let tick = 0;

async function publishToB(c: Client): Promise<string> {
  const body = `probe-${++tick}`;
  const before = c.errors.length;
  c.nc.publish("cotal.beta.events.probe", body);
  await c.nc.flush().catch(() => undefined);
  await sleep(250);
  if (seen.includes(body)) return "B's subscriber received it";
  throw refused(c, before, "not delivered to B");
}

async function subscribeToB(c: Client, bPublisher: Client): Promise<string> {
  const got: string[] = [];
  const before = c.errors.length;
  const sub = c.nc.subscribe("cotal.beta.events.>", { callback: (e, m) => void (e ? undefined : got.push(m.string())) });
  await c.nc.flush().catch(() => undefined);
  bPublisher.nc.publish("cotal.beta.events.secret", "b-private");
  await bPublisher.nc.flush();
  await sleep(250);
  sub.unsubscribe();
  if (got.length > 0) return `received ${got.length} of B's messages`;
  throw refused(c, before, "received nothing");
}

async function bStreamInfo(c: Client): Promise<string> {
  const info = await (await jetstreamManager(c.nc, { timeout: 2_000 })).streams.info("cotal_events_beta");
  return `${info.state.messages} messages`;
}

async function bBucketGet(c: Client): Promise<string> {
  const kv = await new Kvm(c.nc).open("cotal_state_beta", { timeout: 2_000 });
  const e = await kv.get("k1");
  if (!e) throw new Error("no entry");
  return `read ${JSON.stringify(e.string())}`;
}

async function bBucketPut(c: Client): Promise<string> {
  const kv = await new Kvm(c.nc).open("cotal_state_beta", { timeout: 2_000 });
  return `wrote revision ${await kv.put("k2", "x")}`;
}

async function sysRequest(c: Client, subject: string, wants: (reply: string) => boolean): Promise<string> {
  const before = c.errors.length;
  try {
    const m = await c.nc.request(subject, JSON.stringify({ auth: true }), { timeout: 1_500 });
    if (wants(m.string())) return `reply carries B's data (${m.data.length} bytes)`;
    throw new Error("reply holds nothing about B");
  } catch (err) {
    throw c.errors.length > before ? refused(c, before, (err as Error).message) : err;
  }
}

/** The account-scoped $SYS requests whose replies carry B's data (each names B's account key). */
const SYS_ACCOUNT_REQUESTS = ["CONNZ", "JSZ", "INFO", "CONNS", "STATZ"] as const;

const aboutB = (text: string) => text.includes("beta-resident") || text.includes(keyB);

async function connzAboutB(c: Client, what = "CONNZ"): Promise<string> {
  return sysRequest(c, `$SYS.REQ.ACCOUNT.${keyB}.${what}`, aboutB);
}

async function serverConnz(c: Client): Promise<string> {
  return sysRequest(c, "$SYS.REQ.SERVER.PING.CONNZ", aboutB);
}

async function authorityBucket(c: Client, bucket: string): Promise<string> {
  const info = await (await jetstreamManager(c.nc, { timeout: 2_000 })).streams.info(`KV_${bucket}`);
  return `${info.state.messages} records`;
}

/**
 * Listens on every reply subject it may, while B's observer (`bObserver`, default B's real one) and
 * B's user make requests.
 */
async function othersReplies(c: Client, bObserver = B.observer): Promise<string> {
  const got: string[] = [];
  const before = c.errors.length;
  const bPrefix = `_INBOX_${decodeJwt(parseCreds(bObserver).jwt).sub}`;
  const subs = ["_INBOX.>", `${bPrefix}.>`, "$SYS._INBOX.>"].map((s) => c.nc.subscribe(s, { callback: (e, m) => void (e ? undefined : got.push(m.subject)) }));
  await c.nc.flush().catch(() => undefined);
  await sleep(100);
  const bObs = await as(bObserver, "beta-observer");
  const reply = await bObs.nc.request(`$SYS.REQ.ACCOUNT.${keyB}.CONNZ`, "{}", { timeout: 2_000 });
  if (!aboutB(reply.string()) && !reply.string().includes("connections")) throw new Error("control: B's observer got no CONNZ reply");
  await (await jetstreamManager(resident.nc)).getAccountInfo();
  await bObs.close();
  await sleep(250);
  for (const s of subs) s.unsubscribe();
  if (got.length > 0) return `captured ${got.length} replies meant for others (${got[0]})`;
  throw refused(c, before, "captured nothing");
}

/** B's observer asks about its own account: the control of the $SYS rows. */
async function bObserverOwnConnz(what = "CONNZ"): Promise<Outcome> {
  const c = await as(B.observer, "beta-observer-control");
  return attempt(() => connzAboutB(c, what));
}

// ---- A's own template: the default user may use it, not reconfigure or delete it ----

async function useTemplate(c: Client, space: string): Promise<string> {
  const js = jetstream(c.nc);
  const ack = await js.publish(`cotal.${space}.events.own`, "mine");
  const kv = await new Kvm(c.nc).open(`cotal_state_${space}`);
  const watched: string[] = [];
  const w = await kv.watch({ key: "w" });
  void (async () => {
    for await (const e of w) watched.push(e.string());
  })();
  await kv.put("w", "watched");
  const got = (await kv.get("w"))?.string();
  const jsm = await jetstreamManager(c.nc);
  await jsm.consumers.add(`cotal_events_${space}`, { durable_name: `reader-${++tick}`, ack_policy: AckPolicy.Explicit });
  const eph = await js.consumers.get(`cotal_events_${space}`);
  const m = await eph.next({ expires: 2_000 });
  for (let i = 0; i < 20 && watched.length === 0; i++) await sleep(50);
  w.stop();
  if (got !== "watched" || !m || watched.length === 0) throw new Error(`incomplete: get=${got} next=${Boolean(m)} watch=${watched.length}`);
  return `publish seq ${ack.seq}, kv put/get/watch, durable + ephemeral consumer`;
}

async function updateStream(c: Client, stream: string): Promise<string> {
  const jsm = await jetstreamManager(c.nc, { timeout: 2_000 });
  const info = await jsm.streams.info(stream);
  await jsm.streams.update(stream, { ...info.config, description: `touched ${++tick}` });
  return "reconfigured";
}

async function purgeStream(c: Client, stream: string): Promise<string> {
  const r2 = await (await jetstreamManager(c.nc, { timeout: 2_000 })).streams.purge(stream);
  return `purged ${r2.purged}`;
}

async function createStream(c: Client): Promise<string> {
  await (await jetstreamManager(c.nc, { timeout: 2_000 })).streams.add({ name: `extra_${++tick}`, subjects: [`extra.${tick}`] });
  return "created";
}

async function deleteStream(c: Client, stream: string): Promise<string> {
  await (await jetstreamManager(c.nc, { timeout: 2_000 })).streams.delete(stream);
  return "deleted";
}

async function row(target: string, cred: string, expectAllowed: boolean, run: () => Promise<string>, control: () => Promise<Outcome>): Promise<IsolationRow> {
  const res: IsolationRow = { target, cred, expectAllowed, attempt: await attempt(run), control: await control() };
  rows.push(res);
  return res;
}

beforeAll(async () => {
  ({ r, up } = await upRoot());
  ok(await r.cotal(["space", "add", "beta"]));
  keyA = (loadSpaceAccount(r.layout, "alpha") as { publicKey: string }).publicKey;
  keyB = (loadSpaceAccount(r.layout, "beta") as { publicKey: string }).publicKey;
  const observer = (s: string) => readFileSync(r.layout.sysCredsFile(s, "observer"), "utf8");
  A = { user: await spaceCreds("alpha", []), admin: await spaceCreds("alpha", ["--admin"]), observer: observer("alpha") };
  B = { user: await spaceCreds("beta", []), admin: await spaceCreds("beta", ["--admin"]), observer: observer("beta") };
  authorityCreds = mintUserCreds(loadAuthorityAccount(r.layout), { name: "isolation-probe", expiresInSeconds: 600 }).creds;
  resident = await as(B.user, "beta-resident");
  resident.nc.subscribe("cotal.beta.events.>", { callback: (_e, m) => void seen.push(m.string()) });
  await new Kvm(resident.nc).open("cotal_state_beta").then((kv) => kv.put("k1", "b-secret"));
  await resident.nc.flush();
}, 120_000);

afterAll(async () => {
  if (rows.length > 0) console.log(reportIsolation(rows, up?.serverVersion ?? "?"));
  await Promise.all(clients.map((c) => c.close()));
  await disposeLiveRoots();
  await harnessTeardown();
});

describe("tenant isolation matrix (A's creds against B, $SYS, the authority, others' replies)", () => {
  const kinds = ["user", "admin", "observer"] as const;
  const bControl = (kind: "user" | "admin" | "observer") => (kind === "observer" ? B.user : B[kind]);

  it("B's subjects, streams and buckets are out of reach of every A cred", () =>
    cell("isolation: B's subjects, streams, buckets", async () => {
      for (const k of kinds) {
        const a = await as(A[k], `alpha-${k}`);
        const b = await as(bControl(k), `beta-control-${k}`);
        await row("B subject cotal.beta.events.* (publish)", `A ${k}`, false, () => publishToB(a), () => attempt(() => publishToB(b)));
        await row("B subject cotal.beta.events.> (subscribe)", `A ${k}`, false, () => subscribeToB(a, resident), () => attempt(() => subscribeToB(b, resident)));
        await row("B stream cotal_events_beta (info)", `A ${k}`, false, () => bStreamInfo(a), () => attempt(() => bStreamInfo(b)));
        await row("B bucket cotal_state_beta (get)", `A ${k}`, false, () => bBucketGet(a), () => attempt(() => bBucketGet(b)));
        await row("B bucket cotal_state_beta (put)", `A ${k}`, false, () => bBucketPut(a), () => attempt(() => bBucketPut(b)));
      }
      const failed = rows.filter((x) => !rowPasses(x));
      expect(failed, JSON.stringify(failed)).toEqual([]);
    }));

  it("$SYS data about B, the authority buckets and others' _INBOX replies are out of reach of every A cred", () =>
    cell("isolation: $SYS about B, authority, others' replies", async (m) => {
      const start = rows.length;
      for (const k of kinds) {
        const a = await as(A[k], `alpha-${k}-sys`);
        for (const what of SYS_ACCOUNT_REQUESTS) await row(`$SYS.REQ.ACCOUNT.<B>.${what}`, `A ${k}`, false, () => connzAboutB(a, what), () => bObserverOwnConnz(what));
        const bUser = await as(B.user, "beta-user-connz");
        await row(`$SYS.REQ.SERVER.PING.CONNZ (B's connections)`, `A ${k}`, false, () => serverConnz(a), () => attempt(() => serverConnz(bUser)));
        const auth = await as(authorityCreds, "authority-control");
        for (const bucket of [INVENTORY_BUCKET, LEASE_BUCKET]) await row(`authority bucket ${bucket}`, `A ${k}`, false, () => authorityBucket(a, bucket), () => attempt(() => authorityBucket(auth, bucket)));
        await row("_INBOX replies of B (observer and user)", `A ${k}`, false, () => othersReplies(a), () => bObserverOwnConnz());
      }
      const failed = rows.slice(start).filter((x) => !rowPasses(x));
      m.notes = [`${rows.length - start} rows`];
      expect(failed, JSON.stringify(failed)).toEqual([]);
      // the observer's refusals are the permission guards, not luck
      const obs = rows.slice(start).filter((x) => x.cred === "A observer");
      expect(obs.map((x) => x.attempt.detail)).toEqual(Array(obs.length).fill("permission violation"));
    }));

  it("A's default user uses A's template but cannot create, reconfigure, purge or delete; A's admin can", () =>
    cell("least privilege: default user vs admin", async () => {
      const start = rows.length;
      const user = await as(A.user, "alpha-user-template");
      const admin = await as(A.admin, "alpha-admin-template");
      const bUser = await as(B.user, "beta-user-template");
      await row("A template stream + bucket (use)", "A user", true, () => useTemplate(user, "alpha"), () => attempt(() => useTemplate(bUser, "beta")));
      await row("A stream cotal_events_alpha (update)", "A user", false, () => updateStream(user, "cotal_events_alpha"), () => attempt(() => updateStream(admin, "cotal_events_alpha")));
      await row("A stream cotal_events_alpha (purge)", "A user", false, () => purgeStream(user, "cotal_events_alpha"), () => attempt(() => purgeStream(admin, "cotal_events_alpha")));
      await row("A account (create a stream)", "A user", false, () => createStream(user), () => attempt(() => createStream(admin)));
      await row("A bucket KV_cotal_presence_alpha (delete)", "A user", false, () => deleteStream(user, "KV_cotal_presence_alpha"), () => attempt(() => deleteStream(admin, "KV_cotal_presence_alpha")));
      // the teardown user of a removal lists and deletes streams, and can do nothing else
      const teardown = await as(mintTeardownCreds(loadSpaceAccount(r.layout, "alpha") as NonNullable<ReturnType<typeof loadSpaceAccount>>), "alpha-teardown");
      const listNames = async (c: Client) => {
        const names: string[] = [];
        for await (const n of (await jetstreamManager(c.nc)).streams.names()) names.push(n);
        return `lists ${names.length} streams`;
      };
      await row("A stream cotal_events_alpha (update)", "A teardown", false, () => updateStream(teardown, "cotal_events_alpha"), () => attempt(() => listNames(teardown)));
      await row("A template stream + bucket (use)", "A teardown", false, () => useTemplate(teardown, "alpha"), () => attempt(() => listNames(teardown)));
      const mine = rows.slice(start);
      expect(mine.filter((x) => !rowPasses(x)), JSON.stringify(mine)).toEqual([]);
      expect(mine.filter((x) => !x.expectAllowed).map((x) => x.attempt.detail)).toEqual(Array(6).fill("permission violation"));
    }));

  it("B's admin may delete B's own bucket (the positive control of every deletion refusal above)", () =>
    cell("isolation: B deletes its own bucket", async () => {
      const a = await as(A.admin, "alpha-admin-delete");
      const b = await as(B.admin, "beta-admin-delete");
      const res = await row("B bucket KV_cotal_presence_beta (delete)", "A admin", false, () => deleteStream(a, "KV_cotal_presence_beta"), () => attempt(() => deleteStream(b, "KV_cotal_presence_beta")));
      expect(rowPasses(res), JSON.stringify(res)).toBe(true);
    }));
});

describe("each guard goes red with its test-only switch", () => {
  const system = () => loadBrokerTrust(r.layout).system;
  const alphaRec = () => ({ name: "alpha", publicKey: keyA });

  it("COTAL_TEST_UNSAFE_WIDE_OBSERVER_INBOX: A's observer captures B's $SYS replies", () =>
    cell("control: wide observer inbox", async () => {
      // the switch is broker-wide, as when set for `space add`: both observers are minted wide
      const [wideA, wideB] = withSwitch("WIDE_OBSERVER_INBOX", (g) => [mintObserverCreds(system(), alphaRec(), g).creds, mintObserverCreds(system(), { name: "beta", publicKey: keyB }, g).creds]);
      const out = await attempt(async () => othersReplies(await as(wideA as string, "alpha-observer-wide"), wideB));
      expect(out.ok, out.detail).toBe(true);
    }));

  it("COTAL_TEST_UNSAFE_WIDE_OBSERVER_REQUESTS: A's observer reads CONNZ about B", () =>
    cell("control: wide observer requests", async () => {
      const wide = withSwitch("WIDE_OBSERVER_REQUESTS", (g) => mintObserverCreds(system(), alphaRec(), g).creds);
      const out = await attempt(async () => connzAboutB(await as(wide, "alpha-observer-wide-req"), "CONNZ"));
      expect(out.ok, out.detail).toBe(true);
    }));

  it("COTAL_TEST_UNSAFE_UNRESTRICTED_USER: a default user reconfigures A's stream", () =>
    cell("control: unrestricted default user", async () => {
      const loose = await spaceCreds("alpha", ["--user", "loose"], { COTAL_TEST_UNSAFE_UNRESTRICTED_USER: "1" });
      const out = await attempt(async () => updateStream(await as(loose, "alpha-loose"), "cotal_events_alpha"));
      expect(out.ok, out.detail).toBe(true);
    }));
});

describe("$SYS material on disk", () => {
  it("the evictor is one 0600 cred under the root with only CONNZ/KICK and its own inbox; observers have their own prefix", () => {
    const path = evictorCredsFile(r.layout);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    const claims = decodeJwt(parseCreds(readFileSync(path, "utf8")).jwt);
    expect(claims.nats.pub).toEqual({ allow: evictorPermissions().allowPub });
    expect(claims.nats.sub).toEqual({ allow: [`_INBOX_${claims.sub}.>`] });
    for (const s of ["alpha", "beta"]) {
      const text = readFileSync(r.layout.sysCredsFile(s, "observer"), "utf8");
      const sub = (decodeJwt(parseCreds(text).jwt).nats.sub as { allow: string[] }).allow;
      expect(sub).not.toContain("_INBOX.>");
      expect(sub.filter((x) => x.startsWith("_INBOX_"))).toHaveLength(1);
    }
  });

  it("up re-mints an observer that still carries the old wide inbox, and only that one", () =>
    cell("upgrade: up re-mints a wide observer", async () => {
      const wide = withSwitch("WIDE_OBSERVER_INBOX", (g) => mintObserverCreds(loadBrokerTrust(r.layout).system, { name: "alpha", publicKey: keyA }, g).creds);
      writeFileSync(r.layout.sysCredsFile("alpha", "observer"), wide, { mode: 0o600 });
      const betaBefore = readFileSync(r.layout.sysCredsFile("beta", "observer"), "utf8");
      for (const c of clients.splice(0)) await c.close();
      ok(await r.cotal(["down"]));
      ({ up } = { up: parseJson<UpResult>(ok(await r.cotal(["up", "--detach", "--json"]))) });
      const alphaAfter = readFileSync(r.layout.sysCredsFile("alpha", "observer"), "utf8");
      expect(alphaAfter).not.toBe(wide);
      expect(observerIsCurrent(alphaAfter, loadBrokerTrust(r.layout).system, { publicKey: keyA }, testGuards())).toBe(true);
      expect(readFileSync(r.layout.sysCredsFile("beta", "observer"), "utf8")).toBe(betaBefore);
      // the re-minted observer still works: it reads its own account's CONNZ on its own inbox
      const obs = await as(alphaAfter, "alpha-observer-reminted");
      const reply = await obs.nc.request(`$SYS.REQ.ACCOUNT.${keyA}.CONNZ`, "{}", { timeout: 2_000 });
      expect(reply.string()).toMatch(/connections/);
      A.observer = alphaAfter;
    }));
});

describe("the per-broker connection evictor", VERSION_DEPENDENT, () => {
  const kickable = () => !up.serverVersion.startsWith("2.9.");

  async function closedWithin(c: Client, ms: number): Promise<boolean> {
    return Promise.race([c.nc.closed().then(() => true), sleep(ms).then(() => false)]);
  }

  it("cuts every connection of one account at once; a sibling's connection stays (where KICK exists)", () =>
    cell("evictor: cuts B, spares A", async (m) => {
      const victim = await as(B.user, "beta-victim");
      const bystander = await as(A.user, "alpha-bystander");
      const res = await evictAccountConnections(r.layout, up.url, keyB, testGuards());
      m.notes = [`${res.outcome}${res.reason ? `: ${res.reason}` : ""}`];
      if (!kickable()) {
        console.log(`evictor cell skipped on nats-server ${up.serverVersion}: ${res.reason}`);
        expect(res.outcome).toBe("skipped");
        expect(res.reason).toMatch(/KICK/);
        return;
      }
      expect(res.outcome, res.reason).toBe("evicted");
      expect(await closedWithin(victim, 3_000)).toBe(true);
      expect(bystander.nc.isClosed()).toBe(false); // positive control: the sibling is untouched
      await bystander.nc.flush();
      expect(res.remaining).toBe(0);
    }));

  it("control: with COTAL_TEST_UNSAFE_NO_EVICT the victim stays connected", () =>
    cell("control: evictor off", async () => {
      const victim = await as(B.user, "beta-victim-2");
      const res = withSwitch("NO_EVICT", (g) => evictAccountConnections(r.layout, up.url, keyB, g));
      expect((await res).outcome).toBe("skipped");
      expect(await closedWithin(victim, 1_500)).toBe(false);
      await victim.close();
    }));

  it("space rm cuts the removed tenant's live connection and its cred never connects again", () =>
    cell("evictor: space rm beta", async (m) => {
      const victim = await as(B.user, "beta-victim-rm");
      const poller = new CredentialPoller({ url: up.url, creds: B.user, concurrency: 2, maxDurationMs: 60_000 }).start();
      await poller.waitForAttempt((x) => x.ok, { timeoutMs: 5_000 }); // positive control: B connects before
      const rm = await r.cotal(["space", "rm", "beta", "--yes", "--json"]);
      const removedAt = monotonicMs();
      expect(rm.code, rm.stderr).toBe(0);
      const result = parseJson<SpaceRmResult>(rm);
      console.log(`space rm eviction on ${up.serverVersion}: ${JSON.stringify(result.eviction)}`);
      expect(result.eviction?.outcome).toMatch(kickable() ? /^(evicted|none)$/ : /^skipped$/);
      expect(result.deletedStreams).toEqual(templateStreamNames("beta").sort()); // the teardown user deleted every one (up re-provisioned presence)
      expect(await closedWithin(victim, 3_000)).toBe(true);
      await sleep(1_500);
      const report = await poller.stop();
      m.attempts = report.total;
      m.successesAfterRemoval = report.successesBetween(removedAt, Number.POSITIVE_INFINITY, "within");
      expect(m.successesAfterRemoval).toBe(0);
    }));
});
