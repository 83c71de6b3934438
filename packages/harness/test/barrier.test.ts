import { spawn } from "node:child_process";
import { afterAll, describe, expect, it } from "vitest";
import { Barrier, barrierEnv, failpointBarrier, harnessTeardown, isHarnessError, parseBarrierEnv, tempRoot } from "../src/index.js";

afterAll(async () => {
  await harnessTeardown();
});

/**
 * A party written against the file protocol alone (as the CLI's failpoint will be): create one
 * file in the directory, wait until N entries exist, then report when it got through.
 */
const PARTY = `
const fs = require("node:fs");
const path = require("node:path");
const [dir, name, n, delayMs] = process.argv.slice(1);
setTimeout(() => {
  fs.mkdirSync(dir, { recursive: true });
  // Stamped before the party file exists: a party descheduled between its write and a later stamp
  // would read as arriving after the other had already (rightly) passed.
  const arrived = Date.now();
  fs.writeFileSync(path.join(dir, name), String(process.pid), { flag: "wx" });
  const deadline = arrived + 10000;
  const tick = () => {
    if (fs.readdirSync(dir).length >= Number(n)) {
      process.stdout.write(JSON.stringify({ name, arrived, passed: Date.now() }));
      process.exit(0);
    }
    if (Date.now() > deadline) process.exit(3);
    setTimeout(tick, 5);
  };
  tick();
}, Number(delayMs));
`;

function party(dir: string, name: string, n: number, delayMs: number): Promise<{ code: number | null; out: { name: string; arrived: number; passed: number } }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["-e", PARTY, dir, name, String(n), String(delayMs)], { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    child.stdout.setEncoding("utf8").on("data", (s: string) => (out += s));
    child.once("error", reject);
    child.once("close", (code) => resolve({ code, out: JSON.parse(out || "{}") as { name: string; arrived: number; passed: number } }));
  });
}

describe("Barrier", () => {
  it("lets two child processes rendezvous: neither passes before the later one arrives", async () => {
    const root = await tempRoot("barrier-");
    const b = Barrier.forStep(root.path, "before-rename");
    const [early, late] = await Promise.all([party(b.path, "early", 2, 0), party(b.path, "late", 2, 400)]);
    expect(early.code).toBe(0);
    expect(late.code).toBe(0);
    expect(early.out.passed).toBeGreaterThanOrEqual(late.out.arrived);
    expect(await b.parties()).toEqual(["early", "late"]);
  });

  it("the harness side meets child processes at the same barrier", async () => {
    const root = await tempRoot("barrier-");
    const b = new Barrier(`${root.path}/three`);
    const children = [party(b.path, "child-a", 3, 50), party(b.path, "child-b", 3, 150)];
    await b.meet("harness", 3, 10_000);
    const results = await Promise.all(children);
    expect(results.map((r) => r.code)).toEqual([0, 0]);
    expect(await b.count()).toBe(3);
  });

  it("times out with a typed error naming who arrived, and refuses a duplicate name", async () => {
    const root = await tempRoot("barrier-");
    const b = new Barrier(`${root.path}/lonely`);
    await b.arrive("only-me");
    const err = await b.waitFor(2, 100).catch((e: unknown) => e);
    expect(isHarnessError(err, "timeout")).toBe(true);
    expect(String(err)).toContain("only-me");
    await expect(b.arrive("only-me")).rejects.toMatchObject({ code: "EEXIST" });
  });

  it("formats and parses COTAL_BARRIER and the saga failpoint form", () => {
    const spec = { dir: "/tmp/x:y", step: "after-claim", parties: 2 };
    const env = barrierEnv(spec);
    expect(env.COTAL_BARRIER).toBe("/tmp/x:y:after-claim:2");
    expect(parseBarrierEnv(env.COTAL_BARRIER ?? "")).toEqual(spec);
    expect(failpointBarrier(spec)).toBe("after-claim:barrier:/tmp/x:y/after-claim:2");
    expect(() => parseBarrierEnv("nope")).toThrow(/COTAL_BARRIER/);
  });
});
