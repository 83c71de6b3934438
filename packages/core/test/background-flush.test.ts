import { closeSync, fdatasync, openSync, writeSync } from "node:fs";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { isCotalError } from "../src/errors.js";
import { BackgroundFlush } from "../src/backup/stream-snapshot.js";

type Sync = (fd: number, done: (err: NodeJS.ErrnoException | null) => void) => void;

/** A flush function whose calls the test completes by hand. */
function heldSync(): { sync: Sync; calls: ((err: NodeJS.ErrnoException | null) => void)[] } {
  const calls: ((err: NodeJS.ErrnoException | null) => void)[] = [];
  return { sync: (_fd, done) => void calls.push(done), calls };
}

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe("a snapshot file's background flush (stream-snapshot.ts)", () => {
  it("flushes once per `every` bytes written, never two at once, and drain waits for the one in flight", async () => {
    const h = heldSync();
    const f = new BackgroundFlush(3, "s.snap", 100, h.sync);
    f.wrote(60);
    expect(h.calls).toHaveLength(0);
    f.wrote(60); // 120 ≥ 100: the first flush starts
    expect(h.calls).toHaveLength(1);
    f.wrote(500); // still in flight: no second flush
    expect(h.calls).toHaveLength(1);
    let drained = false;
    const d = f.drain().then(() => (drained = true));
    await new Promise((r) => setTimeout(r, 5));
    expect(drained).toBe(false);
    h.calls[0]?.(null);
    await d;
    expect(drained).toBe(true);
    f.wrote(100); // the next flush may start now
    expect(h.calls).toHaveLength(2);
    h.calls[1]?.(null);
    await f.drain();
  });

  it("keeps a background flush's error and drain refuses with snapshot-failed (the final fsync may not see it again)", async () => {
    const h = heldSync();
    const f = new BackgroundFlush(3, "s.snap", 10, h.sync);
    f.wrote(10);
    h.calls[0]?.(Object.assign(new Error("EIO: i/o error"), { code: "EIO" }));
    f.wrote(10);
    h.calls[1]?.(null); // a later flush that succeeds does not clear the earlier failure
    const err = await f.drain().then(() => undefined, (e: unknown) => e);
    expect(isCotalError(err) && err.code).toBe("snapshot-failed");
    expect((err as Error).message).toContain("s.snap");
  });

  it("flushes a real file through fdatasync", async () => {
    const dir = mkdtempSync(join(tmpdir(), "cotal-flush-"));
    dirs.push(dir);
    const fd = openSync(join(dir, "s.snap"), "wx", 0o600);
    let flushed = 0;
    const f = new BackgroundFlush(fd, "s.snap", 1024, (n, done) => fdatasync(n, (err) => ((flushed += err ? 0 : 1), done(err))));
    try {
      writeSync(fd, Buffer.alloc(4096, 1));
      f.wrote(4096);
      await f.drain();
      expect(flushed).toBe(1);
    } finally {
      closeSync(fd);
    }
  });
});
