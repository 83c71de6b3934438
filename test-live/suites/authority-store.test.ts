import { readFileSync, readdirSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { NatsConnection } from "@nats-io/transport-node";
import { JetStreamApiError, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { Kvm, type KV } from "@nats-io/kv";
import { freePort, harnessTeardown, selectBackend, sleep, tempRoot, type Broker } from "@cotal/harness";
import { liveServer } from "../fixtures/server-version.js";
import { CotalError, isCotalError } from "@cotal/core";
import { connectAsAccount, serverConfig } from "@cotal/core/broker";
import { AuthorityStore, INVENTORY_BUCKET, INVENTORY_KEY, LEASE_BUCKET, LEASE_TTL_MS, isCasLoss, seedRecord, type InventoryRecord, type Lease } from "@cotal/core/inventory";
import { toAccountRecord, type AccountRecord } from "@cotal/core/root";
import { createAccountTrust, createBrokerTrust } from "@cotal/core/trust";
import { VERSION_DEPENDENT } from "../fixtures/tags.js";

// Real nats-server (the harness picks a process, or a container when Docker answers), no mocks.

interface Env {
  broker: Broker;
  authority: AccountRecord;
}

async function startBroker(name: string): Promise<Env> {
  const trust = createBrokerTrust({ retainSystemSigningSeed: false });
  const authority = createAccountTrust(trust.operator, "authority", { kind: "authority" });
  const alpha = createAccountTrust(trust.operator, "alpha", { kind: "space" });
  const port = await freePort();
  const store = await tempRoot("cotal-authority-js-");
  const config = serverConfig(trust, [alpha], { host: "127.0.0.1", port, serverName: name, storeDir: store.path, authority });
  const broker = await (await selectBackend()).start({ config, port, name });
  return { broker, authority: toAccountRecord(authority) };
}

/** A plain authority-account connection: for raw KV handles and for watching reload disconnects. */
async function rawConnection(env: Env, name: string): Promise<NatsConnection> {
  return connectAsAccount(env.broker.url, env.authority, { name, reconnect: true });
}

function record(generation: number, spaces: string[] = ["alpha"]): InventoryRecord {
  return { ...seedRecord(spaces, null, false), generation, appliedGeneration: generation - 1 };
}

async function refusal(p: Promise<unknown>): Promise<CotalError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(CotalError);
    return err as CotalError;
  }
  throw new Error("expected a refusal, got success");
}

async function rawError(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error("expected the raw KV call to fail");
}

/** SIGSTOP returns before every thread has stopped; wait until all of them are in state T. */
async function freeze(pid: number): Promise<void> {
  process.kill(pid, "SIGSTOP");
  const stopped = (): boolean =>
    readdirSync(`/proc/${pid}/task`).every((t) => {
      const stat = readFileSync(`/proc/${pid}/task/${t}/stat`, "utf8");
      return stat.slice(stat.lastIndexOf(")") + 2).startsWith("T");
    });
  for (let i = 0; !stopped(); i++) {
    if (i > 200) throw new Error(`nats-server ${pid} did not stop`);
    await sleep(5);
  }
}

const holderA = { pid: 1111, host: "host-a", verb: "space add" };
const holderB = { pid: 2222, host: "host-b", verb: "space rm" };

afterAll(async () => {
  await harnessTeardown();
});

describe("AuthorityStore on a real nats-server", () => {
  let env: Env;
  let store: AuthorityStore;
  let other: AuthorityStore;
  let raw: NatsConnection;
  let rawKv: KV;

  beforeAll(async () => {
    env = await startBroker("authority-main");
    store = await AuthorityStore.connect(env.broker.url, env.authority, { name: "store-a" });
    other = await AuthorityStore.connect(env.broker.url, env.authority, { name: "store-b" });
    raw = await rawConnection(env, "raw");
    rawKv = await new Kvm(raw).open(INVENTORY_BUCKET);
  });

  afterAll(async () => {
    await store?.close();
    await other?.close();
    await raw?.close();
  });

  it("creates both buckets in the shape the design asks for", async () => {
    const jsm = await jetstreamManager(raw);
    const inv = (await jsm.streams.info(`KV_${INVENTORY_BUCKET}`)).config;
    expect(inv.allow_direct).toBe(false);
    expect(inv.max_msgs_per_subject).toBe(1);
    expect(inv.storage).toBe("file");
    expect(inv.max_age).toBe(0);
    expect(inv.subjects).toEqual([`$KV.${INVENTORY_BUCKET}.>`]);
    const lease = (await jsm.streams.info(`KV_${LEASE_BUCKET}`)).config;
    expect(lease.max_age).toBe(LEASE_TTL_MS * 1_000_000);
    expect(lease.max_age).toBe(10_000_000_000);
    expect(lease.max_msgs_per_subject).toBe(1);
    expect(lease.storage).toBe("file");
    expect(lease.allow_direct).toBe(false);
    // Neither name carries a space token.
    expect(INVENTORY_BUCKET).not.toMatch(/alpha/);
    expect(LEASE_BUCKET).not.toMatch(/alpha/);
    // Control: reconnecting to existing, correctly shaped buckets is accepted.
    const again = await AuthorityStore.connect(env.broker.url, env.authority);
    await again.close();
  });

  it("seeds create-only: the first create wins, the second refuses with conflict", VERSION_DEPENDENT, async () => {
    expect(await store.read()).toBeUndefined();
    const first = record(1, ["alpha"]);
    const rev = await store.create(first);
    expect(rev).toBeGreaterThan(0);
    const err = await refusal(other.create(record(1, ["alpha", "beta"])));
    expect(err.code).toBe("conflict");
    expect(err.next).toBeTruthy();
    expect(isCasLoss(err)).toBe(true);
    // What @nats-io/kv itself throws on the same conflict: JetStreamApiError, err_code 10071.
    const rawErr = await rawError(rawKv.create(INVENTORY_KEY, "x"));
    expect(rawErr).toBeInstanceOf(JetStreamApiError);
    expect((rawErr as JetStreamApiError).code).toBe(10071);
    expect(isCasLoss(rawErr)).toBe(true);
    expect(await store.read()).toEqual({ record: first, revision: rev });
    // Direct Get is off on this stream, so the store's successful reads above went through
    // $JS.API.STREAM.MSG.GET (leader-served); a handle that insists on Direct Get gets no answer.
    const direct = await new Kvm(jetstream(raw, { timeout: 500 })).open(INVENTORY_BUCKET, { allow_direct: true });
    await expect(direct.get(INVENTORY_KEY)).rejects.toThrow();
    expect((await rawKv.get(INVENTORY_KEY))?.revision).toBe(rev); // control: a MSG.GET handle reads it
  });

  it("classifies CAS losses by err_code only, never by message text", VERSION_DEPENDENT, async () => {
    const cur = await store.read();
    const rawErr = await rawError(rawKv.update(INVENTORY_KEY, "x", cur!.revision + 50));
    expect(rawErr).toBeInstanceOf(JetStreamApiError);
    expect([10071, 10164]).toContain((rawErr as JetStreamApiError).code);
    expect(isCasLoss(rawErr)).toBe(true);
    expect(isCasLoss(new Error("wrong last sequence: 3", { cause: rawErr }))).toBe(true); // via the cause chain
    expect(isCasLoss(new Error("wrong last sequence: 3"))).toBe(false);
    expect(isCasLoss(new CotalError("conflict", "wrong last sequence"))).toBe(false);
    expect(isCasLoss(undefined)).toBe(false);
    expect((await store.read())?.revision).toBe(cur!.revision); // control: the failed raw update changed nothing
  });

  it("CAS update: a stale revision refuses with conflict, the current revision succeeds", async () => {
    const cur = (await store.read())!;
    const stale = await refusal(store.update(record(cur.record.generation + 1, ["alpha", "stale"]), cur.revision - 1 || cur.revision + 7));
    expect(stale.code).toBe("conflict");
    expect(stale.next).toBeTruthy();
    expect(isCasLoss(stale)).toBe(true);
    expect((await store.read())?.revision).toBe(cur.revision);
    const next = record(cur.record.generation + 1, ["alpha", "beta"]);
    const rev = await store.update(next, cur.revision);
    expect(rev).toBeGreaterThan(cur.revision);
    expect(await store.read()).toEqual({ record: next, revision: rev });
  });

  it("two connections updating at the same revision: exactly one wins, every round", async () => {
    for (let round = 0; round < 10; round++) {
      const cur = (await store.read())!;
      const a = record(cur.record.generation + 1, ["alpha", `a${round}`]);
      const b = record(cur.record.generation + 1, ["alpha", `b${round}`]);
      const [ra, rb] = await Promise.allSettled([store.update(a, cur.revision), other.update(b, cur.revision)]);
      const won = [ra, rb].filter((r) => r.status === "fulfilled");
      const lost = [ra, rb].filter((r): r is PromiseRejectedResult => r.status === "rejected");
      expect(won).toHaveLength(1);
      expect(lost).toHaveLength(1);
      expect(isCotalError(lost[0]!.reason, "conflict")).toBe(true);
      expect(isCasLoss(lost[0]!.reason)).toBe(true);
      const after = (await store.read())!;
      expect(after.revision).toBe((won[0] as PromiseFulfilledResult<number>).value);
      expect(after.record).toEqual(ra.status === "fulfilled" ? a : b);
    }
  });

  it("refuses to write a record read() would call corrupt", async () => {
    const err = await refusal(store.update({ ...record(9), spaces: ["Not A Name"] }, 1));
    expect(err.code).toBe("invalid-argument");
    expect(err.next).toBeTruthy();
  });

  describe("writer lease", () => {
    const key = "root-0123abcd";

    it("acquire, refuse a second holder by name, renew, release, reacquire", async () => {
      const a = await store.acquireLease(key, holderA);
      expect(a.leaseId).toMatch(/^[0-9a-f-]{36}$/);
      expect(await store.checkLease(a)).toBe(true);

      const held = await refusal(other.acquireLease(key, holderB));
      expect(held.code).toBe("lease-held");
      expect(held.message).toContain("pid 1111");
      expect(held.message).toContain("space add");
      expect(held.next).toBeTruthy();
      const details = held.details as { holder: { pid: number; verb: string }; remainingMs: number };
      expect(details.holder).toMatchObject({ pid: 1111, verb: "space add", host: "host-a" });
      expect(details.remainingMs).toBeGreaterThan(0);
      expect(details.remainingMs).toBeLessThanOrEqual(LEASE_TTL_MS);

      const renewed = await store.renewLease(a);
      expect(renewed.revision).toBeGreaterThan(a.revision);
      expect(renewed.leaseId).toBe(a.leaseId);
      expect(await store.checkLease(renewed)).toBe(true);
      // A renewal whose bytes equal the current value counts as already landed (same id, same ms):
      // step past the millisecond so the stale copy's bytes differ and only its revision can decide.
      await new Promise((res) => setTimeout(res, 5));
      const lost = await refusal(store.renewLease(a)); // the pre-renewal copy is at a stale revision
      expect(lost.code).toBe("lease-lost");
      expect(lost.next).toBeTruthy();
      expect(await store.checkLease(renewed)).toBe(true); // control: the failed renew took nothing away

      await store.releaseLease(renewed);
      expect(await store.checkLease(renewed)).toBe(false);
      const b = await other.acquireLease(key, holderB); // over the delete marker
      expect(await other.checkLease(b)).toBe(true);
      expect(await store.checkLease(renewed)).toBe(false); // a stale copy of A's lease is not held

      // Releasing a stale copy never throws and never deletes someone else's lease.
      await store.releaseLease(renewed);
      await store.releaseLease(a);
      expect(await other.checkLease(b)).toBe(true);
      await refusal(store.renewLease(renewed)).then((e) => expect(e.code).toBe("lease-lost"));

      await other.releaseLease(b);
      await other.releaseLease(b); // already gone: still no throw
      expect(await other.checkLease(b)).toBe(false);
    });

    it("refuses a key that is not a KV key", async () => {
      const err = await refusal(store.acquireLease("bad key*", holderA));
      expect(err.code).toBe("invalid-argument");
    });
  });

  describe("reloads (2.9.10 drops every JWT client on each one)", VERSION_DEPENDENT, () => {
    let watcher: NatsConnection;
    const events: string[] = [];

    beforeAll(async () => {
      watcher = await rawConnection(env, "watcher");
      void (async () => {
        for await (const s of watcher.status()) events.push(s.type);
      })().catch(() => undefined);
    });

    afterAll(async () => {
      await watcher?.close();
    });

    async function waitFor(pred: () => boolean, ms = 10_000): Promise<void> {
      const until = Date.now() + ms;
      while (!pred()) {
        if (Date.now() > until) throw new Error("timed out waiting");
        await sleep(25);
      }
    }

    it("update() works after a SIGHUP reload: the connection comes back (or, 2.14.8+, never drops)", async () => {
      const before = events.filter((e) => e === "reconnect").length;
      const from = events.length;
      expect(await env.broker.reload()).toBe("reloaded");
      if (liveServer.reloadKeepsJwtClients) {
        // nats-server PR #8609: a reload keeps every JWT client that signed with an nkey.
        await sleep(300);
        expect(events.slice(from)).not.toContain("disconnect");
      } else {
        // Positive control: the reload really did drop (and the client restore) a JWT connection.
        await waitFor(() => events.filter((e) => e === "reconnect").length > before);
        expect(events).toContain("disconnect");
      }
      const cur = (await store.read())!;
      const next = record(cur.record.generation + 1, ["alpha", "after-reload"]);
      const rev = await store.update(next, cur.revision);
      expect(await store.read()).toEqual({ record: next, revision: rev });
    });

    it("an update racing a reload lands (verified by read-back) or refuses typed; never untyped, never twice", async () => {
      const racer = await AuthorityStore.connect(env.broker.url, env.authority, { name: "racer", timeoutMs: 1_500 });
      try {
        const outcomes: string[] = [];
        for (let i = 0; i < 6; i++) {
          const pre = (await racer.read())!;
          const next = record(pre.record.generation + 1, ["alpha", `race${i}`]);
          const reload = env.broker.reload();
          if (i % 2 === 1) await sleep(i * 3);
          const [res] = await Promise.allSettled([racer.update(next, pre.revision), reload]);
          expect(await reload).toBe("reloaded");
          const post = (await racer.read())!;
          // CAS-pinned at pre.revision: at most one write, and only ever ours.
          expect([pre.revision, pre.revision + 1]).toContain(post.revision);
          if (post.revision === pre.revision + 1) expect(post.record).toEqual(next);
          if (res.status === "fulfilled") {
            expect(res.value).toBe(post.revision);
            expect(post.record).toEqual(next);
            outcomes.push("landed");
          } else {
            expect(res.reason).toBeInstanceOf(CotalError);
            expect(["conflict", "inventory-unreachable"]).toContain((res.reason as CotalError).code);
            expect((res.reason as CotalError).next).toBeTruthy();
            outcomes.push((res.reason as CotalError).code);
          }
        }
        expect(outcomes).toHaveLength(6);
        // Control: after the storm, a plain update goes through.
        const cur = (await racer.read())!;
        await racer.update(record(cur.record.generation + 1), cur.revision);
      } finally {
        await racer.close();
      }
    }, 90_000);
  });

  describe("lost replies (the broker frozen with SIGSTOP while a CAS is in flight)", () => {
    it("a write whose reply timed out but which landed returns its revision, not a failure", async (ctx) => {
      const pid = env.broker.pid;
      if (pid === undefined) ctx.skip();
      const slow = await AuthorityStore.connect(env.broker.url, env.authority, { name: "slow", timeoutMs: 600 });
      try {
        const pre = (await slow.read())!;
        const next = record(pre.record.generation + 1, ["alpha", "frozen"]);
        await freeze(pid!);
        const t0 = Date.now();
        let resumed = false;
        const write = slow.update(next, pre.revision);
        write.catch(() => undefined); // awaited below
        try {
          await sleep(1_200); // well past the 600 ms request timeout: the reply is lost for sure
        } finally {
          process.kill(pid!, "SIGCONT");
          resumed = true;
        }
        const rev = await write;
        expect(resumed).toBe(true);
        expect(Date.now() - t0).toBeGreaterThanOrEqual(1_200);
        expect(rev).toBe(pre.revision + 1);
        expect(await slow.read()).toEqual({ record: next, revision: rev });
      } finally {
        await slow.close();
      }
    });

    it("lease acquire, renew and release whose replies were lost still settle by read-back", async (ctx) => {
      const pid = env.broker.pid;
      if (pid === undefined) ctx.skip();
      const slow = await AuthorityStore.connect(env.broker.url, env.authority, { name: "slow-lease", timeoutMs: 600 });
      const frozen = async <T>(op: () => Promise<T>): Promise<T> => {
        await freeze(pid!);
        const p = op();
        p.catch(() => undefined); // observed below; keeps an early rejection from counting as unhandled
        try {
          await sleep(1_000);
        } finally {
          process.kill(pid!, "SIGCONT");
        }
        return p;
      };
      try {
        const key = "root-frozen";
        const a = await frozen(() => slow.acquireLease(key, holderA));
        expect(await other.checkLease(a)).toBe(true);
        expect((await refusal(other.acquireLease(key, holderB))).code).toBe("lease-held"); // control: really held
        const renewed = await frozen(() => slow.renewLease(a));
        expect(renewed.revision).toBeGreaterThan(a.revision);
        expect(await other.checkLease(renewed)).toBe(true);
        await frozen(() => slow.releaseLease(renewed));
        expect(await other.checkLease(renewed)).toBe(false);
        const b = await other.acquireLease(key, holderB); // the release really landed
        await other.releaseLease(b);
      } finally {
        await slow.close();
      }
    });

    it("two frozen writers at one revision: the one whose reply was lost decides by read-back; exactly one wins", async (ctx) => {
      const pid = env.broker.pid;
      if (pid === undefined) ctx.skip();
      const slow = await AuthorityStore.connect(env.broker.url, env.authority, { name: "slow2", timeoutMs: 600 });
      const patient = await AuthorityStore.connect(env.broker.url, env.authority, { name: "patient", timeoutMs: 10_000 });
      try {
        for (let round = 0; round < 3; round++) {
          const pre = (await slow.read())!;
          const a = record(pre.record.generation + 1, ["alpha", `slow${round}`]);
          const b = record(pre.record.generation + 1, ["alpha", `patient${round}`]);
          await freeze(pid!);
          const settled = Promise.allSettled([slow.update(a, pre.revision), patient.update(b, pre.revision)]);
          try {
            await sleep(1_000);
          } finally {
            process.kill(pid!, "SIGCONT");
          }
          const [ra, rb] = await settled;
          const post = (await slow.read())!;
          expect(post.revision).toBe(pre.revision + 1);
          expect([ra.status, rb.status].sort()).toEqual(["fulfilled", "rejected"]);
          if (ra.status === "fulfilled") {
            expect(post.record).toEqual(a);
            expect(ra.value).toBe(post.revision);
            expect(rb.status === "rejected" && isCasLoss(rb.reason)).toBe(true); // B got a real answer: 10071
          } else {
            expect(post.record).toEqual(b);
            const e = ra.reason as CotalError;
            expect(e.code).toBe("conflict");
            expect(e.details?.lostReply).toBe(true); // decided by read-back, not by an err_code
            expect(isCasLoss(e)).toBe(false);
          }
        }
      } finally {
        await slow.close();
        await patient.close();
      }
    });
  });

  it("a corrupt stored value makes read() refuse inventory-corrupt with the raw text", async () => {
    expect((await store.read())?.record.spaces).toContain("alpha"); // control: the record reads fine
    await rawKv.put(INVENTORY_KEY, "{");
    const err = await refusal(store.read());
    expect(err.code).toBe("inventory-corrupt");
    expect(err.next).toBeTruthy();
    expect(err.details?.raw).toBe("{");
    await rawKv.put(INVENTORY_KEY, JSON.stringify({ ...record(3), generation: 0 }));
    expect((await refusal(store.read())).code).toBe("inventory-corrupt");
  });
});

describe("AuthorityStore bucket shape refusals", () => {
  it("refuses an existing inventory bucket with allow_direct true and leaves it untouched", async () => {
    const env = await startBroker("authority-shape");
    const raw = await rawConnection(env, "raw-shape");
    try {
      await new Kvm(raw).create(INVENTORY_BUCKET, { history: 1, allow_direct: true });
      const err = await refusal(AuthorityStore.connect(env.broker.url, env.authority));
      expect(err.code).toBe("inventory-corrupt");
      expect(err.message).toContain("allow_direct");
      expect(err.next).toBeTruthy();
      const jsm = await jetstreamManager(raw);
      expect((await jsm.streams.info(`KV_${INVENTORY_BUCKET}`)).config.allow_direct).toBe(true); // never silently altered
      // Control: once the wrong bucket is gone, the same call creates the right one.
      await jsm.streams.delete(`KV_${INVENTORY_BUCKET}`);
      const ok = await AuthorityStore.connect(env.broker.url, env.authority);
      await ok.close();
      expect((await jsm.streams.info(`KV_${INVENTORY_BUCKET}`)).config.allow_direct).toBe(false);
    } finally {
      await raw.close();
    }
  });

  it("concurrent first connects on a fresh broker all succeed and agree on one bucket", async () => {
    const env = await startBroker("authority-fresh");
    const stores = await Promise.all([0, 1, 2, 3].map((i) => AuthorityStore.connect(env.broker.url, env.authority, { name: `fresh-${i}` })));
    try {
      const seeded = await stores[0]!.create(record(1));
      for (const s of stores) expect((await s.read())?.revision).toBe(seeded);
    } finally {
      await Promise.all(stores.map((s) => s.close()));
    }
  });

  it("refuses an unreachable broker with inventory-unreachable", async () => {
    const env = await startBroker("authority-gone");
    const url = env.broker.url;
    await env.broker.stop();
    const err = await refusal(AuthorityStore.connect(url, env.authority, { timeoutMs: 1_000 }));
    expect(err.code).toBe("inventory-unreachable");
    expect(err.next).toBeTruthy();
  });
});

describe("lease TTL", () => {
  const ttl = 1_500;
  let env: Env;
  let x: AuthorityStore;
  let y: AuthorityStore;

  beforeAll(async () => {
    env = await startBroker("authority-ttl");
    x = await AuthorityStore.connect(env.broker.url, env.authority, { leaseTtlMs: ttl });
    y = await AuthorityStore.connect(env.broker.url, env.authority, { leaseTtlMs: ttl });
  });

  afterAll(async () => {
    await x?.close();
    await y?.close();
  });

  it("after the TTL passes, a new holder can acquire a lease nobody renewed", async () => {
    const key = "root-ttl";
    const t0 = Date.now();
    const a: Lease = await x.acquireLease(key, holderA);
    expect((await refusal(y.acquireLease(key, holderB))).code).toBe("lease-held"); // control: held while fresh
    let b: Lease | undefined;
    while (b === undefined) {
      try {
        b = await y.acquireLease(key, holderB);
      } catch (err) {
        if (!isCotalError(err, "lease-held") || Date.now() - t0 > 10_000) throw err;
        await sleep(100);
      }
    }
    expect(Date.now() - t0).toBeGreaterThanOrEqual(ttl - 100);
    expect(await y.checkLease(b)).toBe(true);
    expect(await x.checkLease(a)).toBe(false);
    expect((await refusal(x.renewLease(a))).code).toBe("lease-lost");
  });

  it("renewal keeps a lease alive past its first TTL", async () => {
    const key = "root-renewed";
    let a = await x.acquireLease(key, holderA);
    for (let i = 0; i < 4; i++) {
      await sleep(ttl / 3);
      a = await x.renewLease(a);
    }
    // Positive control for the cell above: well past one TTL, and still held because it was renewed.
    expect(await x.checkLease(a)).toBe(true);
    expect((await refusal(y.acquireLease(key, holderB))).code).toBe("lease-held");
    await x.releaseLease(a);
    const b = await y.acquireLease(key, holderB);
    await y.releaseLease(b);
  });

  it("refuses a lease bucket whose TTL differs from the one asked for", async () => {
    const err = await refusal(AuthorityStore.connect(env.broker.url, env.authority));
    expect(err.code).toBe("inventory-corrupt");
    expect(err.message).toContain("max_age");
  });
});
