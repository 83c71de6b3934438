import { JetStreamApiCodes, JetStreamApiError, jetstreamManager, RetentionPolicy, StorageType } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { connectAsAccount } from "../broker/connect.js";
import { SagaError } from "../errors.js";
import type { AccountRecord } from "../root/records.js";
import { spaceTemplate } from "./template.js";

/** Spaces provisioned at once: each is its own account, so they are independent; the bound keeps
 * a large batch or a cold boot from opening thousands of connections together. */
export const PROVISION_CONCURRENCY = 16;

export interface ProvisionResult {
  space: string;
  streams: string[];
  buckets: string[];
}

/**
 * Creates the space template's streams and buckets, idempotently (an identical config is a no-op on
 * the server), under a short-lived provisioner user of the space's own account.
 */
export async function provisionSpace(url: string, account: AccountRecord, replicas = 1): Promise<ProvisionResult> {
  const tpl = spaceTemplate(account.name, replicas);
  const nc = await connectAsAccount(url, account, { name: `cotal-provisioner-${account.name}`, ttlSeconds: 300 });
  try {
    const jsm = await jetstreamManager(nc);
    for (const s of tpl.streams) {
      const cfg = { name: s.name, subjects: s.subjects, storage: StorageType.File, retention: RetentionPolicy.Limits, description: s.description, num_replicas: s.replicas };
      try {
        await jsm.streams.info(s.name);
        await jsm.streams.update(s.name, cfg);
      } catch (err) {
        if (!(err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound)) throw err;
        await jsm.streams.add(cfg);
      }
    }
    const kvm = new Kvm(nc);
    for (const b of tpl.buckets) {
      await kvm.create(b.bucket, { history: b.history, ttl: b.ttlMs, storage: StorageType.File, description: b.description, replicas: b.replicas });
    }
    return { space: account.name, streams: tpl.streams.map((s) => s.name), buckets: tpl.buckets.map((b) => b.bucket) };
  } catch (err) {
    if (err instanceof SagaError) throw err;
    throw new SagaError("broker-unreachable", `provisioning space ${account.name} failed: ${(err as Error).message}`, {
      next: `cotal up   # re-runs provisioning for every space (idempotent)`,
      cause: err,
    });
  } finally {
    await nc.close();
  }
}
