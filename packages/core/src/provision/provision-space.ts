import { setTimeout as sleep } from "node:timers/promises";
import { JetStreamApiError, jetstream, jetstreamManager, RetentionPolicy, StorageType, type JetStreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { connectAsAccount } from "../broker/connect.js";
import { CotalError, isCotalError } from "../errors.js";
import type { AccountRecord } from "../root/records.js";
import { spaceTemplate } from "./template.js";

/** Spaces provisioned at once at most: each is its own account, so they are independent; the bound
 * keeps a large batch or a cold boot from opening thousands of connections together. The broker's
 * open files can narrow it further (provision/provision-batch.ts, broker/fd-budget.ts). */
export const PROVISION_CONCURRENCY = 16;

/** nats-server's JSStreamNameExistErr: the stream exists with another config (an older template). */
const STREAM_NAME_IN_USE = 10058;
/**
 * Waits before reconnecting a provisioner the server dropped with "Authentication Timeout": a broker
 * busy creating thousands of streams can take longer than its auth timeout (2 s) to check a new
 * client (measured at 2,500 tenants on 2.14.10 under load, BENCHMARKS.md). Provisioning is idempotent.
 */
const AUTH_TIMEOUT_WAITS_MS = [250, 1_000];

export interface ProvisionResult {
  space: string;
  streams: string[];
  buckets: string[];
}

/**
 * Creates the space template's streams and buckets, idempotently (an identical config is a no-op on
 * the server), under a short-lived provisioner user of the space's own account. The creates are
 * independent, so they go out together on the one connection (BENCHMARKS.md "Provisioning"): a fresh
 * space costs two round trips deep instead of ten in turn, and the API probe is skipped (a broker
 * without JetStream for the account still fails, on the first create).
 */
export async function provisionSpace(url: string, account: AccountRecord, replicas = 1): Promise<ProvisionResult> {
  const tpl = spaceTemplate(account.name, replicas);
  const nc = await connectProvisioner(url, account);
  // A reload before 2.14.8 drops this connection, and a request in flight would wait out its 5 s
  // timeout: the drop fails the attempt at once instead (the caller retries; creation is idempotent).
  const dropped = new Promise<never>((_, reject) => {
    void (async () => {
      for await (const st of nc.status()) if (st.type === "disconnect") return reject(new Error("the connection dropped (a reload)"));
    })().catch(() => undefined);
  });
  dropped.catch(() => undefined);
  try {
    const jsm = await jetstreamManager(nc, { checkAPI: false });
    const kvm = new Kvm(jetstream(nc, { checkAPI: false }));
    const work = createTemplate(jsm, kvm, tpl);
    work.catch(() => undefined); // a drop that wins the race leaves it to fail on the closed connection
    await Promise.race([work, dropped]);
    return { space: account.name, streams: tpl.streams.map((s) => s.name), buckets: tpl.buckets.map((b) => b.bucket) };
  } catch (err) {
    if (isCotalError(err)) throw err;
    throw new CotalError("broker-unreachable", `provisioning space ${account.name} failed: ${(err as Error).message}`, {
      next: `cotal up   # re-runs provisioning for every space (idempotent)`,
      cause: err,
    });
  } finally {
    await nc.close();
  }
}

async function connectProvisioner(url: string, account: AccountRecord): Promise<Awaited<ReturnType<typeof connectAsAccount>>> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await connectAsAccount(url, account, { name: `cotal-provisioner-${account.name}`, ttlSeconds: 300 });
    } catch (err) {
      const wait = AUTH_TIMEOUT_WAITS_MS[attempt];
      if (wait === undefined || !/authentication timeout/i.test((err as Error).message)) throw err;
      await sleep(wait);
    }
  }
}

/** Every create of the template at once on one connection; each settles before the first failure is thrown. */
async function createTemplate(jsm: JetStreamManager, kvm: Kvm, tpl: ReturnType<typeof spaceTemplate>): Promise<void> {
  const creates: Promise<unknown>[] = [
    ...tpl.streams.map(async (s) => {
      const cfg = { name: s.name, subjects: s.subjects, storage: StorageType.File, retention: RetentionPolicy.Limits, description: s.description, num_replicas: s.replicas };
      // Add first: a fresh space (the common case) needs one round trip; an existing stream
      // with an identical config answers the add as-is, a changed one is updated.
      try {
        await jsm.streams.add(cfg);
      } catch (err) {
        if (!(err instanceof JetStreamApiError && err.code === STREAM_NAME_IN_USE)) throw err;
        await jsm.streams.update(s.name, cfg);
      }
    }),
    ...tpl.buckets.map((b) => kvm.create(b.bucket, { history: b.history, ttl: b.ttlMs, storage: StorageType.File, description: b.description, replicas: b.replicas })),
  ];
  const failed = (await Promise.allSettled(creates)).find((r): r is PromiseRejectedResult => r.status === "rejected");
  if (failed) throw failed.reason;
}
