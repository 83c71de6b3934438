/**
 * A broker root in a temp directory, for saga tests that run without nats-server: broker trust and
 * a first space minted by the same code `cotal up` uses (root/create-root.ts), its server.conf
 * rendered, and the generation-1 record a cold boot would seed. Rendering asks the nats-server
 * binary for its version (`--version`); no server is started.
 */
import { GUARDS_ON, type Guards } from "../guards.js";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { seedRecord, type InventoryRecord } from "../inventory/record.js";
import { acquireMaintenanceLock, releaseMaintenanceLock, type MaintenanceLock } from "../lock/maintenance-lock.js";
import { createRootTrust } from "../root/create-root.js";
import { RootLayout } from "../root/layout.js";
import { writeFileAtomic } from "../root/secret-files.js";
import { saveSettings } from "../root/settings.js";
import type { SagaEnv } from "../saga/mutation.js";
import { renderList } from "../saga/render-list.js";
import { FakeReloader } from "./fake-reloader.js";
import { MemoryInventoryStore, type MemoryStoreOptions } from "./memory-store.js";

export interface TempRoot {
  layout: RootLayout;
  firstSpace: string;
  /** The committed config of generation 1, as written to server.conf. */
  conf: { text: string; digest: string };
  /** The record a cold boot seeds for this root (generation 1, proven). */
  record: InventoryRecord;
  remove(): void;
}

export function createTempRoot(opts: { firstSpace?: string; multiSpace?: boolean } = {}): TempRoot {
  const firstSpace = opts.firstSpace ?? "default";
  const layout = new RootLayout(mkdtempSync(join(tmpdir(), "cotal-saga-")));
  saveSettings(layout, { format: "cotal.settings/1", host: "127.0.0.1", port: 4222, serverName: "cotal-memory", createdAt: new Date().toISOString() });
  createRootTrust(layout, firstSpace, { multiSpace: opts.multiSpace ?? true });
  const conf = renderList(layout, [firstSpace], GUARDS_ON);
  writeFileAtomic(layout.serverConf, conf.text);
  return { layout, firstSpace, conf, record: seedRecord([firstSpace], conf.digest, true), remove: () => rmSync(layout.root, { recursive: true, force: true }) };
}

/** A saga environment on a temp root: the in-memory store (seeded unless told otherwise), a scripted reloader, the root lock. */
export interface MemorySaga {
  root: TempRoot;
  store: MemoryInventoryStore;
  /** Absent for an offline saga (broker stopped): it stops after promotion. */
  reloader: FakeReloader | undefined;
  lock: MaintenanceLock;
  env: SagaEnv;
  /** Releases the lock and removes the root. */
  close(): void;
}

export function memorySaga(opts: { root?: TempRoot; store?: MemoryInventoryStore; storeOptions?: MemoryStoreOptions; reloader?: FakeReloader; offline?: boolean; seed?: boolean; guards?: Guards } = {}): MemorySaga {
  const root = opts.root ?? createTempRoot();
  const store = opts.store ?? new MemoryInventoryStore(opts.storeOptions);
  if (opts.seed !== false && !store.peek()) store.put(root.record);
  const reloader = opts.offline ? undefined : (opts.reloader ?? new FakeReloader(root.layout));
  const guards = opts.guards ?? GUARDS_ON;
  const lock = acquireMaintenanceLock(root.layout.root, "memory saga test", guards);
  const env: SagaEnv = { layout: root.layout, store, lock, leaseKey: "root_memory", leaseWaitMs: 0, guards, ...(reloader ? { reloader } : {}) };
  return {
    root,
    store,
    reloader,
    lock,
    env,
    close: () => {
      releaseMaintenanceLock(lock);
      root.remove();
    },
  };
}
