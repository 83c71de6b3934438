import { GUARDS_ON } from "../guards.js";
import { rmSync } from "node:fs";
import { join, resolve } from "node:path";
import { jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { RERUN, CotalError } from "../errors.js";
import { assertSpaceName } from "../names.js";
import { connectAsAccount } from "../broker/connect.js";
import { RootLayout } from "../root/layout.js";
import { withVerb } from "../verb/verb.js";
import { Attempt, cloneSpaceStore } from "./attempt.js";
import { requireReadyCut } from "./cut.js";
import { canonicalRoot } from "../root/canonical-root.js";
import { assertJournalAllows } from "../journal/journal.js";
import { startPrivateBroker, typedPrivateBrokerFailure, type PrivateBroker } from "../broker/private-broker.js";
import { storeOwners, validateSpaceBackupInventory } from "./store-inventory.js";
import { publishArtifact, snapshotDurableStreams } from "./snapshot-set.js";
import { ttlStreams, type SpaceBackupOptions, type SpaceBackupResult } from "./backup-contract.js";
import { brokerState } from "../broker/runtime.js";
import { spaceBackupOnline } from "./online-backup.js";
import { checkBackupOut, spaceStoreBytes } from "./artifact-paths.js";
import { refuseOfflineOnCluster } from "../verb/cluster-offline.js";

export { ttlStreams, type SpaceBackupOptions, type SpaceBackupResult } from "./backup-contract.js";

/**
 * `cotal space backup <name> --out DIR` (docs/lifecycle.md "Backup and restore"): online on a running broker (online-backup.ts),
 * else offline, after a ready cut. Claims the
 * attempt in the journal before creating anything, snapshots a clone of the store through a private
 * broker, and publishes manifest.json last and atomically. Any failure removes what it provably created.
 */
export async function spaceBackup(opts: SpaceBackupOptions): Promise<SpaceBackupResult> {
  const guards = opts.guards ?? GUARDS_ON;
  const space = assertSpaceName(opts.space, guards);
  const out = resolve(opts.out);
  const layout = new RootLayout(canonicalRoot(opts.root));
  // A running broker is backed up online (only that tenant quiesced); a stopped one through its cut.
  if (opts.mode !== "offline" && brokerState(layout).running) return spaceBackupOnline({ ...opts, guards });
  refuseOfflineOnCluster(layout, guards, `space backup ${space}`, "is online only (offline, it snapshots a preserved store through a private broker)");
  const progress = opts.onProgress ?? (() => undefined);
  const journal = { verb: "space backup offline" as const };
  assertJournalAllows(layout, journal, guards); // a standing removal names itself before any input check
  checkBackupOut(out, { space, root: layout.root, needBytes: spaceStoreBytes(layout.root, space) });
  // The lock, the reaping of leaked brokers, the journal and the certain inventory: the one preamble (verb/verb.ts).
  return withVerb({ root: layout.root, guards, purpose: `cotal space backup ${space}`, journal, lockWaitMs: opts.lockWaitMs ?? 30_000 }, async ({ lock, disk: tenants }) => {
    const cut = requireReadyCut(layout, "space backup", guards);
    const account = tenants.find((t) => t.name === space);
    if (!account) throw new CotalError("space-not-found", `space ${space} does not exist on ${layout.root}`, { next: "cotal space list" });
    const owners = storeOwners(layout, tenants);
    // A read-only look first: refuse an orphaned store before claiming anything.
    validateSpaceBackupInventory(layout.storeDir, owners, space, account.publicKey);

    const attempt = Attempt.claim(layout, lock, cut, "backup", space, [{ role: "out", path: out }]);
    const work = attempt.workDir;
    let broker: PrivateBroker | undefined;
    let nc: NatsConnection | undefined;
    try {
      attempt.createDir("work", work);
      const clone = join(work, "nats");
      progress({ phase: "clone", done: 0, total: 1 });
      await cloneSpaceStore(layout.storeDir, clone, account.publicKey, guards); // only this tenant: the cost follows the space
      progress({ phase: "clone", done: 1, total: 1 });
      attempt.stage("cloned");
      const onDisk = validateSpaceBackupInventory(clone, owners, space, account.publicKey);
      broker = await startPrivateBroker(layout, { storeDir: clone, workDir: work, spaces: [account], label: "backup", guards, onSpawn: (o) => attempt.broker(o) });
      nc = await connectAsAccount(broker.url, account, { name: `cotal-backup-${space}`, reconnect: false, ttlSeconds: 3600 });
      const jsm = await jetstreamManager(nc);
      const excluded = ttlStreams(space);
      const infos = [];
      for await (const si of jsm.streams.list()) infos.push(si);
      const loaded = infos.map((i) => i.config.name);
      const unloaded = onDisk.filter((n) => !loaded.includes(n));
      if (unloaded.length > 0) {
        throw new CotalError("store-inventory", `streams of space ${space} on disk did not load in the private broker: ${unloaded.join(", ")}`, { next: `tail -n 40 ${join(work, "backup.log")}   # why they did not load; then ${RERUN}` });
      }
      const durable = infos.filter((i) => !excluded.some((e) => e.name === i.config.name)).sort((a, b) => (a.config.name < b.config.name ? -1 : 1));
      attempt.createDir("out", out);
      attempt.stage("snapshotting");
      // Complete: each snapshot saw exactly the state the store reported (the store is quiescent under the cut).
      const set = await snapshotDurableStreams(nc, jsm, out, durable, progress, { kind: "still", changed: (name, before, after) =>
        new CotalError("store-inventory", `stream ${name} changed during its snapshot (${before}→${after} messages)`, { next: "cotal down --preserve-state   # then back up again" }) }, guards);
      const { streams, files } = await publishArtifact(out, set, { space, accountPublicKey: account.publicKey, cutId: cut.cutId, attemptId: attempt.id, consistency: "cross-stream", excluded: excluded.map((e) => ({ ...e, class: "ttl" as const })) });
      attempt.stage("published");
      await nc.close();
      nc = undefined;
      await broker.stop();
      broker = undefined;
      rmSync(work, { recursive: true, force: true });
      attempt.release();
      return {
        space,
        out,
        attemptId: attempt.id,
        cutId: cut.cutId,
        accountPublicKey: account.publicKey,
        streams: streams.map((s, i) => ({ name: s.name, messages: s.state.messages, bytes: s.state.bytes, size: files[i]?.size ?? 0 })),
        excluded: excluded.map((e) => e.name),
        bytes: files.reduce((n, f) => n + f.size, 0),
        mode: "offline",
      };
    } catch (err) {
      // Fail closed to `ready`: remove exactly the inodes this attempt recorded; keep the claim if any cannot be proven.
      await nc?.close().catch(() => undefined);
      await broker?.stop().catch(() => undefined);
      attempt.abandon();
      throw typedPrivateBrokerFailure(err, `cotal space backup ${space} --out ${out}   # run it again`);
    }
  });
}

