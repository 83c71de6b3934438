import { mkdirSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { resetFailpoints } from "../src/failpoints.js";
import { acquireMaintenanceLock, readLockOwner, releaseMaintenanceLock } from "../src/lock/maintenance-lock.js";
import { storeIdentity } from "../src/backup/cut.js";
import { up } from "../src/ops/up.js";
import { readJournal, type CutEntry } from "../src/journal/journal.js";
import { writeJsonAtomic } from "../src/root/secret-files.js";
import { createTempRoot, type TempRoot } from "../src/testing/temp-root.js";

// `up` on a root whose journal holds a preserve-state cut: the verb preamble takes the lock once,
// the cut resume runs under it and calls the boot step directly. No nats-server is started here:
// every case refuses (or fails at a failpoint) before the boot step would spawn one.
const roots: TempRoot[] = [];
afterEach(() => {
  delete process.env.COTAL_FAILPOINT;
  resetFailpoints();
  roots.splice(0).forEach((r) => r.remove());
});

function cutRoot(entry: Partial<CutEntry>): TempRoot {
  const root = createTempRoot();
  roots.push(root);
  mkdirSync(root.layout.storeDir, { recursive: true, mode: 0o700 });
  const cut: CutEntry = { op: "cut", state: "ready", cutId: "c1", startedAt: new Date().toISOString(), store: storeIdentity(root.layout), ...entry };
  writeJsonAtomic(root.layout.journalFile, cut);
  return root;
}

async function refusal(p: Promise<unknown>): Promise<{ code?: string; message: string }> {
  return p.then(
    () => ({ message: "resolved" }),
    (e: unknown) => e as { code?: string; message: string },
  );
}

/** The lock is free again: the preamble released what it took, and only it. */
function lockFree(root: TempRoot): void {
  expect(readLockOwner(root.layout.root)).toBeUndefined();
  releaseMaintenanceLock(acquireMaintenanceLock(root.layout.root, "probe"));
}

describe("up resuming a preserve-state cut", () => {
  it("a store that is not the preserved inode refuses (resume-refused), journal untouched, lock released", async () => {
    const root = cutRoot({ store: { dev: 1, ino: 1 } });
    const before = readJournal(root.layout);
    expect(await refusal(up({ root: root.layout.root, detach: true }))).toMatchObject({ code: "resume-refused" });
    expect(readJournal(root.layout)).toEqual(before);
    lockFree(root);
  });

  it("a dead attempt on the cut refuses with attempt-pending naming its clean command", async () => {
    const owner = { pid: 2 ** 22 + 7, host: "elsewhere" };
    const root = cutRoot({ attempt: { id: "a1", kind: "backup", space: "default", owner, startedAt: new Date().toISOString(), stage: "snapshot", paths: [], brokers: [] } });
    const err = await refusal(up({ root: root.layout.root, detach: true }));
    expect(err).toMatchObject({ code: "attempt-pending" });
    lockFree(root);
  });

  it("a held lock refuses the resumed up at the preamble, before resume-intent is written", async () => {
    const root = cutRoot({});
    const held = acquireMaintenanceLock(root.layout.root, "someone else");
    try {
      expect(await refusal(up({ root: root.layout.root, detach: true }))).toMatchObject({ code: "lock-held" });
      expect(readJournal(root.layout)).toMatchObject({ state: "ready" });
    } finally {
      releaseMaintenanceLock(held);
    }
  });

  it("a boot step that fails after resume-intent leaves the cut ready with the error, never resume-intent with the lock free", async () => {
    const root = cutRoot({});
    process.env.COTAL_FAILPOINT = "up-locked:throw";
    resetFailpoints();
    const err = await refusal(up({ root: root.layout.root, detach: true }));
    expect(err.message).toMatch(/failpoint up-locked/);
    expect(readJournal(root.layout)).toMatchObject({ op: "cut", state: "ready", lastResumeError: expect.stringMatching(/up-locked/) });
    lockFree(root);
  });
});
