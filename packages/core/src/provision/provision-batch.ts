import { GUARDS_ON, type Guards } from "../guards.js";
import { hostname } from "node:os";
import { isCotalError } from "../errors.js";
import { fdsPerTenant, provisionWidth, readBrokerFds } from "../broker/fd-budget.js";
import type { BrokerRuntime } from "../broker/runtime.js";
import { parseServerVersion } from "../broker/server-features.js";
import { mapPaced } from "../pool.js";
import type { LoadedBroker } from "../root/broker-store.js";
import type { RootLayout } from "../root/layout.js";
import type { AccountRecord } from "../root/records.js";
import { readTextIfExists, writeFilesAtomic } from "../root/secret-files.js";
import { mintObserverCreds, observerIsCurrent } from "../saga/materialise.js";
import { ensureEvictorCreds } from "../broker/evict-connections.js";
import { PROVISION_CONCURRENCY, provisionSpace, type ProvisionResult } from "./provision-space.js";
import { SystemClient } from "../broker/system-client.js";
import { readAccountStreams, spacesOwingTemplate } from "./template-check.js";

/** How often the pacer re-reads the broker's open files (/proc/<pid>/fd is a directory listing). */
const PACE_SAMPLE_MS = 200;

/**
 * The batch form of saga/materialise.ts writeObserverCreds, under the same rule (observerIsCurrent):
 * every space of the batch whose $SYS observer creds are missing or stale gets them, written by
 * writeFilesAtomic (temp + fsync + rename each, 0600 in a 0700 space dir, the fsyncs overlapped
 * off the event loop, each directory fsynced once). Returns how many were written.
 */
export async function writeObserverCredsBatch(layout: RootLayout, broker: LoadedBroker, records: readonly AccountRecord[], guards: Guards = GUARDS_ON): Promise<number> {
  ensureEvictorCreds(layout, broker);
  if (!broker.system.signingSeed) return 0;
  const entries: { path: string; data: string }[] = [];
  for (const rec of records) {
    const path = layout.sysCredsFile(rec.name, "observer");
    const existing = readTextIfExists(path);
    if (existing !== undefined && observerIsCurrent(existing, broker.system, rec, guards)) continue;
    entries.push({ path, data: mintObserverCreds(broker.system, rec, guards).creds });
  }
  await writeFilesAtomic(entries, { secretDirs: true });
  return entries.length;
}

/**
 * The pool width for provisioning on this broker: PROVISION_CONCURRENCY, narrowed when the broker's
 * open files run short (provisionWidth). A broker on another host, or one /proc does not show, gets
 * the plain bound.
 */
export function provisionPacer(runtime: Pick<BrokerRuntime, "owner" | "serverVersion">): (p: { unfinished: number }) => number {
  if (runtime.owner.host !== hostname()) return () => PROVISION_CONCURRENCY;
  const perTenant = fdsPerTenant(parseServerVersion(runtime.serverVersion));
  let sampled: { at: number; fds: ReturnType<typeof readBrokerFds> } | undefined;
  return ({ unfinished }) => {
    const now = Date.now();
    if (!sampled || now - sampled.at >= PACE_SAMPLE_MS) sampled = { at: now, fds: readBrokerFds(runtime.owner.pid) };
    const fds = sampled.fds;
    if (!fds) return PROVISION_CONCURRENCY;
    return provisionWidth({ limit: fds.soft, open: fds.open, unfinished, perTenant, max: PROVISION_CONCURRENCY });
  };
}

/**
 * Provisions a batch of spaces on the running broker: their observer creds are written (async,
 * batched) while the template's streams and buckets are created through a pool whose width
 * follows the broker's free file descriptors. `onProvision` is called after each space.
 */
export interface ProvisionSpacesOptions {
  /** After each space, for a progress bar. */
  onProvision?: (p: { done: number; total: number; space: string }) => void;
  /** A retried provisioning, said once per retry. */
  onNotice?: (m: string) => void;
  /** A retried provisioning, counted (the exporter's provisioning retries; docs/metrics.md). */
  onRetry?: (space: string) => void;
  /** The tenants' own streams and buckets: 1, or 3 on a cluster root that asked for it (default 1). */
  replicas?: number;
  /** Keep re-trying a dropped provisioner this long, once a second (default: twice, at once). */
  retryForMs?: number;
  /** The records whose template to create (default: all); observer creds are written for all. */
  templateFor?: readonly AccountRecord[];
  /** The verb's guards (the observers' permissions; docs/ablation.md). */
  guards: Guards;
}

/**
 * How long provisioning keeps re-trying while a cluster's JetStream re-elects or a node rejoins: `up`
 * after a node returned, and `space add` when a node did not answer (docs/cluster.md "Adds with a node
 * down": right after a node dies the meta group elects a new leader and JetStream calls time out).
 * 30 s was once not enough on a loaded 2-core CI machine running two clusters: six attempts timed out.
 */
export const CLUSTER_REJOIN_MS = 60_000;

/**
 * Provisioning is idempotent, and once `space add` released its lock the next writer's reload can drop
 * the provisioner's connection (every JWT client, before 2.14.8) mid-request: such a failure is retried,
 * twice at once, or every second until `retryForMs` ran out (a cluster node rejoining JetStream).
 */
async function provisionRetrying(url: string, rec: AccountRecord, replicas: number, retryForMs: number | undefined, onNotice?: (m: string) => void, onRetry?: (space: string) => void): Promise<ProvisionResult> {
  const deadline = retryForMs === undefined ? undefined : Date.now() + retryForMs;
  for (let attempt = 1; ; attempt++) {
    try {
      return await provisionSpace(url, rec, replicas);
    } catch (err) {
      const more = deadline === undefined ? attempt < 3 : Date.now() <= deadline;
      if (!more || !isCotalError(err, "broker-unreachable")) throw err;
      onRetry?.(rec.name);
      onNotice?.(`provisioning ${rec.name} again (attempt ${attempt + 1}${deadline === undefined ? "/3" : ""}): ${err.message}`);
      if (deadline !== undefined) await new Promise((r) => setTimeout(r, 1_000));
    }
  }
}

export async function provisionSpaces(
  layout: RootLayout,
  broker: LoadedBroker,
  runtime: Pick<BrokerRuntime, "url" | "owner" | "serverVersion">,
  records: readonly AccountRecord[],
  opts: ProvisionSpacesOptions,
): Promise<ProvisionResult[]> {
  const { onProvision, onNotice, onRetry, replicas = 1, retryForMs, templateFor = records } = opts;
  let done = 0;
  const width = provisionPacer(runtime);
  const [creds, provisioned] = await Promise.allSettled([
    writeObserverCredsBatch(layout, broker, records, opts.guards),
    mapPaced(templateFor, width, async (rec) => {
      const r = await provisionRetrying(runtime.url, rec, replicas, retryForMs, onNotice, onRetry);
      onProvision?.({ done: ++done, total: templateFor.length, space: rec.name });
      return r;
    }),
  ]);
  if (provisioned.status === "rejected") throw provisioned.reason;
  if (creds.status === "rejected") throw creds.reason;
  return provisioned.value;
}

/**
 * A cold boot's provisioning re-check: one paged JSZ read of every account's streams through a
 * JSZ-only system user (provision/template-check.ts) instead of one provisioner connection per space,
 * each of which makes the server build that account (O(tenants) in nats-server: BENCHMARKS.md);
 * then only the spaces whose template is missing or differs are provisioned. Without the system
 * signing seed, or when the read fails, every space is checked the old way.
 */
export async function reprovisionSpaces(
  layout: RootLayout,
  broker: LoadedBroker,
  runtime: Pick<BrokerRuntime, "url" | "owner" | "serverVersion">,
  records: readonly AccountRecord[],
  opts: Omit<ProvisionSpacesOptions, "templateFor">,
): Promise<ProvisionResult[]> {
  let due: readonly AccountRecord[] = records;
  if (broker.system.signingSeed !== undefined && records.length > 0) {
    let client: SystemClient | undefined;
    try {
      client = await SystemClient.connect(runtime.url, broker.system, { jsz: true });
      due = spacesOwingTemplate(records, await readAccountStreams(client, records.map((r) => r.publicKey)), opts.replicas ?? 1);
    } catch (err) {
      opts.onNotice?.(`checking every space's streams one by one (the JSZ read failed: ${(err as Error).message})`);
    } finally {
      await client?.close();
    }
  }
  return provisionSpaces(layout, broker, runtime, records, { ...opts, templateFor: due });
}
