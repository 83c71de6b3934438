import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { awaitProvisioned, liveProvisioners, oweProvisioning, readProvisioningOwed, settleOwed, settleProvisioning } from "../src/provision/owed.js";
import { RootLayout } from "../src/root/layout.js";
import { isCotalError } from "../src/errors.js";

// One marker per owing verb (docs/saga.md, "Provisioning after the commit").
let dir: string;
afterEach(() => rmSync(dir, { recursive: true, force: true }));
function root(): RootLayout {
  dir = mkdtempSync(join(tmpdir(), "cotal-owed-"));
  const layout = new RootLayout(dir);
  mkdirSync(layout.maintenanceDir, { recursive: true });
  return layout;
}
const markers = (l: RootLayout) => readdirSync(join(l.maintenanceDir, "provisioning.d")).filter((f) => f.endsWith(".json"));
/** A marker as another process (`pid`) on this host left it. */
function foreign(l: RootLayout, pid: number, spaces: string[]): void {
  mkdirSync(join(l.maintenanceDir, "provisioning.d"), { recursive: true });
  writeFileSync(join(l.maintenanceDir, "provisioning.d", `${pid}-x.json`), JSON.stringify({ spaces, since: "2026-01-01T00:00:00.000Z", owner: { pid, host: hostname() } }));
}
const DEAD_PID = 2 ** 22 - 3; // above pid_max's default: no such process
const LIVE_PID = process.ppid; // alive, and not this process

describe("provisioning owed: one marker per owing verb", () => {
  it("each owe is its own file; status reads their union; a verb settles only its own", () => {
    const l = root();
    const a = oweProvisioning(l, ["b", "a"]);
    const b = oweProvisioning(l, ["c", "a"]);
    expect(markers(l)).toHaveLength(2);
    expect(readProvisioningOwed(l)?.spaces).toEqual(["a", "b", "c"]);
    settleOwed(a);
    expect(readProvisioningOwed(l)?.spaces).toEqual(["a", "c"]); // b's marker still owes a
    settleOwed(b, ["c"]);
    expect(readProvisioningOwed(l)?.spaces).toEqual(["a"]);
    settleOwed(b);
    expect(readProvisioningOwed(l)).toBeUndefined();
  });

  it("`up` settling everything keeps a live owner's marker and drops a dead one's", () => {
    const l = root();
    foreign(l, DEAD_PID, ["dead"]);
    foreign(l, LIVE_PID, ["busy"]);
    oweProvisioning(l, ["mine"]);
    settleProvisioning(l);
    expect(readProvisioningOwed(l)?.spaces).toEqual(["busy"]);
  });

  it("an unreadable marker makes everything owed, and `up` clears it", () => {
    const l = root();
    mkdirSync(join(l.maintenanceDir, "provisioning.d"), { recursive: true });
    writeFileSync(join(l.maintenanceDir, "provisioning.d", "9-x.json"), "{not json");
    expect(readProvisioningOwed(l)?.unreadable).toBe(true);
    settleProvisioning(l);
    expect(readProvisioningOwed(l)).toBeUndefined();
  });

  it("liveProvisioners names the live owners of that space, this process included (a worker runs adds and removals)", () => {
    const l = root();
    foreign(l, DEAD_PID, ["x"]);
    foreign(l, LIVE_PID, ["x", "y"]);
    const mine = oweProvisioning(l, ["z"]);
    expect(liveProvisioners(l, "x").map((o) => o.pid)).toEqual([LIVE_PID]);
    expect(liveProvisioners(l, "z").map((o) => o.pid)).toEqual([process.pid]);
    settleOwed(mine);
    expect(liveProvisioners(l, "z")).toEqual([]);
    expect(liveProvisioners(l, "w")).toEqual([]);
  });

  it("awaitProvisioned returns once the owner settles, and refuses lock-held naming it after the wait", async () => {
    const l = root();
    foreign(l, LIVE_PID, ["x"]);
    const notices: string[] = [];
    const waiting = awaitProvisioned(l, "x", 5_000, (m) => notices.push(m));
    setTimeout(() => rmSync(join(l.maintenanceDir, "provisioning.d", `${LIVE_PID}-x.json`)), 120);
    await waiting;
    expect(notices[0]).toContain(`pid ${LIVE_PID}`);

    foreign(l, LIVE_PID, ["x"]);
    const err = await awaitProvisioned(l, "x", 100).then(() => undefined, (e: unknown) => e);
    expect(isCotalError(err, "lock-held")).toBe(true);
    expect((err as Error & { next?: string }).next).toContain(`while kill -0 ${LIVE_PID}`);
    await awaitProvisioned(l, "y", 0); // nothing owes y
  });
});
