import { readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { SagaError } from "../errors.js";
import { assertSpaceName } from "../names.js";
import { pidAlive } from "../lock/process-identity.js";
import { releaseMaintenanceLock, waitForMaintenanceLock } from "../lock/maintenance-lock.js";
import { deleteSpaceStreams } from "../provision/teardown-space.js";
import { evictAccountConnections, type EvictionResult } from "../provision/evict-connections.js";
import { certainInventory, deleteSpaceAccount, loadSpaceAccount } from "../root/account-store.js";
import { RootLayout } from "../root/layout.js";
import { assertJournalAllows, clearJournal, readJournal, writeJournal } from "../saga/journal.js";
import { decisionRead, runMutation, type MutationResult } from "../saga/mutation.js";
import { openLiveSession, type SessionHooks } from "./session.js";

export interface SpaceRmOptions extends SessionHooks {
  root: string;
  name: string;
  lockWaitMs?: number;
}

export interface SpaceRmResult {
  space: string;
  outcome: "removed" | "absent";
  deletedStreams: string[];
  saga?: MutationResult;
  eviction?: EvictionResult;
  reaped: string[];
  reapFailures: { path: string; error: string }[];
}

/** Live pids recorded under space.<hex>/run/*.pid: a tenant's daemons must be stopped before its removal. */
export function liveSpaceProcesses(layout: RootLayout, space: string): { pid: number; file: string }[] {
  const dir = layout.spaceRunDir(space);
  let files: string[];
  try {
    files = readdirSync(dir).filter((f) => f.endsWith(".pid"));
  } catch {
    return [];
  }
  const live: { pid: number; file: string }[] = [];
  for (const f of files) {
    const pid = Number(readFileSync(join(dir, f), "utf8").trim());
    if (Number.isInteger(pid) && pid > 0 && pidAlive(pid)) live.push({ pid, file: join(dir, f) });
  }
  return live;
}

/** Step 7: each removal is attempted and reported; a throw here would wedge the journal forever. */
function reapSpaceMaterial(layout: RootLayout, space: string): { reaped: string[]; failures: { path: string; error: string }[] } {
  const reaped: string[] = [];
  const failures: { path: string; error: string }[] = [];
  for (const [path, fn] of [
    [layout.accountFile(space), () => deleteSpaceAccount(layout, space)],
    [layout.spaceDir(space), () => rmSync(layout.spaceDir(space), { recursive: true, force: true })],
  ] as const) {
    try {
      fn();
      reaped.push(path);
    } catch (err) {
      failures.push({ path, error: (err as Error).message });
    }
  }
  return { reaped, failures };
}

/**
 * 000 §2.2: journal, commit point = delete the space's streams, re-render through the saga, reap the
 * local material, clear the journal. A re-run after a crash finishes the removal.
 */
export async function spaceRm(opts: SpaceRmOptions): Promise<SpaceRmResult> {
  const space = assertSpaceName(opts.name);
  const layout = new RootLayout(opts.root);
  const session = await openLiveSession(layout, "space rm", opts);
  try {
    const decided = await decisionRead(session.store);
    const lock = await waitForMaintenanceLock(layout.root, `cotal space rm ${space}`, opts.lockWaitMs ?? 30_000);
    try {
      assertJournalAllows(layout, { op: "space-rm", space });
      const resuming = readJournal(layout)?.space === space;
      const disk = certainInventory(layout);
      const current = await session.store.read();
      const listed = current?.record.spaces ?? [];
      const onDisk = disk.some((s) => s.name === space);
      if (!resuming && !listed.includes(space) && !onDisk) {
        return { space, outcome: "absent", deletedStreams: [], reaped: [], reapFailures: [] };
      }
      if (listed.includes(space) && listed.length === 1) {
        throw new SagaError("invalid-argument", `space ${space} is the last tenant of this broker; removing it would leave a config with zero spaces`, {
          exit: "to tear the whole broker down: cotal down, then delete the root directory",
        });
      }
      const live = liveSpaceProcesses(layout, space);
      if (live.length > 0) {
        throw new SagaError("live-process", `space ${space} still has live processes: ${live.map((p) => `pid ${p.pid} (${p.file})`).join(", ")}`, {
          exit: `stop ${live.map((p) => `pid ${p.pid}`).join(", ")}, then re-run \`cotal space rm ${space}\``,
        });
      }
      if (!resuming) writeJournal(layout, lock, { op: "space-rm", space, startedAt: new Date().toISOString() });
      let deletedStreams: string[] = [];
      const account = loadSpaceAccount(layout, space);
      if (account && listed.includes(space)) {
        deletedStreams = await deleteSpaceStreams(session.runtime.url, account); // the point of no return
        writeJournal(layout, lock, { op: "space-rm", space, startedAt: readJournal(layout)?.startedAt ?? new Date().toISOString(), streamsDeleted: true });
      }
      const saga = await runMutation(session.envWith(lock), { op: "remove", adds: [], removes: [space], verb: `space rm ${space}` }, decided);
      const eviction = account ? await evictAccountConnections(layout, session.runtime.url, account.publicKey) : undefined; // never throws
      const { reaped, failures } = reapSpaceMaterial(layout, space);
      if (failures.length === 0) clearJournal(layout, lock);
      return { space, outcome: "removed", deletedStreams, saga, ...(eviction ? { eviction } : {}), reaped, reapFailures: failures };
    } finally {
      releaseMaintenanceLock(lock);
    }
  } finally {
    await session.close();
  }
}
