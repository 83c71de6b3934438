import { existsSync, readFileSync } from "node:fs";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { harnessTeardown, sleep, spawnCotal } from "@cotal/harness";
import type { CutEntry } from "@cotal/core/backup";
import { ok } from "../fixtures/space-data.js";
import { disposeLiveRoots, upRoot } from "../fixtures/tenants.js";

afterEach(disposeLiveRoots);
afterAll(async () => {
  await harnessTeardown();
});

function readJson<T>(path: string): T | undefined {
  try {
    return JSON.parse(readFileSync(path, "utf8")) as T;
  } catch {
    return undefined;
  }
}

describe("a resumed up inherits the maintenance lock (002)", () => {
  it("a concurrent up during the resume refuses at the lock; the journal is never in resume-intent with the lock free", async () => {
    const { r } = await upRoot([], "cotal-bresume-");
    ok(await r.cotal(["down", "--preserve-state"]));

    const child = spawnCotal(["up", "--detach", "--json"], { root: r.root, env: { COTAL_FAILPOINT: "resume-intent:sleep:4000" } });
    const exited = new Promise<number | null>((res) => child.once("exit", (c) => res(c)));
    let stderr = "";
    child.stderr?.setEncoding("utf8").on("data", (s: string) => (stderr += s));
    // Sample the journal and the lock together until the resume finishes: resume-intent ⇒ lock held by the resumer.
    let sawResume = false;
    let raced: Promise<{ code: number | null; stderr: string }> | undefined;
    let done = false;
    void exited.then(() => (done = true));
    while (!done) {
      const j = readJson<CutEntry>(r.layout.journalFile);
      if (j?.state === "resume-intent") {
        const lock = readJson<{ pid: number }>(r.layout.lockFile);
        if (!done && existsSync(r.layout.journalFile)) expect(lock?.pid, "journal in resume-intent with the lock free").toBe(child.pid);
        if (!sawResume) raced = r.cotal(["up", "--detach"]);
        sawResume = true;
      }
      await sleep(20);
    }
    expect(await exited, stderr).toBe(0);
    expect(sawResume).toBe(true);
    const second = await raced;
    expect(second?.code, second?.stderr).toBe(4);
    expect(second?.stderr).toMatch(/lock-held/);
    expect(existsSync(r.layout.journalFile)).toBe(false);
    expect(existsSync(r.layout.lockFile)).toBe(false);
    // positive control: once the resume is done, up is an ordinary no-op on the running broker
    const third = ok(await r.cotal(["up", "--detach"]));
    expect(third.stdout).toMatch(/already running/);
  });

  it("a refused re-entry releases the inherited lock and leaves the cut ready for the next up", async () => {
    const { r } = await upRoot([], "cotal-bresume-");
    ok(await r.cotal(["down", "--preserve-state"]));
    const refused = await r.cotal(["up", "--detach"], { env: { COTAL_FAILPOINT: "up-locked:throw" } });
    expect(refused.code).toBe(1);
    expect(existsSync(r.layout.lockFile)).toBe(false);
    const j = readJson<CutEntry>(r.layout.journalFile);
    expect(j?.state).toBe("ready");
    expect(j?.lastResumeError).toMatch(/failpoint up-locked/);
    // positive control: the next up resumes the preserved store and clears the journal
    const up = ok(await r.cotal(["up", "--detach"]));
    expect(up.stdout).toMatch(/resumed the store preserved by cut/);
    expect(existsSync(r.layout.journalFile)).toBe(false);
  });
});
