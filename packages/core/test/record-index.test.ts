import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { certainInventory, createAccountTrust, createBrokerTrust, isCotalError, RootLayout, saveSpaceAccount, toAccountRecord, type AccountRecord } from "../src/internal.js";
import { forgetParsedRecords } from "../src/root/account-store.js";
import { forgetLoadedIndexes, recordDigest, recordIndexFile } from "../src/root/record-index.js";

const broker = createBrokerTrust({ retainSystemSigningSeed: false });
const mint = (n: string): AccountRecord => toAccountRecord(createAccountTrust(broker.operator, n, { kind: "space" }));
const layoutWith = (): RootLayout => {
  const layout = new RootLayout(mkdtempSync(join(tmpdir(), "cotal-idx-")));
  mkdirSync(layout.authDir, { recursive: true });
  return layout;
};
/** What a new CLI process starts with: no parsed record, no loaded index. */
const freshProcess = (): void => {
  forgetParsedRecords();
  forgetLoadedIndexes();
};
const index = (layout: RootLayout): { format: string; digests: string[] } => JSON.parse(readFileSync(recordIndexFile(layout), "utf8")) as { format: string; digests: string[] };

describe("index of checked account records", () => {
  it("a whole scan records exactly the digests of the bytes that passed, 0600, with no seed in it", () => {
    const layout = layoutWith();
    const recs = ["alpha", "beta"].map(mint);
    for (const r of recs) saveSpaceAccount(layout, r);
    writeFileSync(layout.accountFile("broken"), "{");
    freshProcess();
    expect(() => certainInventory(layout)).toThrow(expect.objectContaining({ code: "corrupt-record" }));
    const doc = index(layout);
    const want = recs.map((r) => recordDigest("space", r.name, readFileSync(layout.accountFile(r.name), "utf8"))).sort();
    expect(doc).toEqual({ format: "cotal.validated-records/1", digests: want });
    expect(statSync(recordIndexFile(layout)).mode & 0o777).toBe(0o600);
    const text = readFileSync(recordIndexFile(layout), "utf8");
    for (const r of recs) expect(text).not.toContain(r.signingSeed);
  });

  it("changed bytes miss the index and are checked in full: a swapped seed is refused in a fresh process", () => {
    const layout = layoutWith();
    const alpha = mint("alpha");
    saveSpaceAccount(layout, alpha);
    freshProcess();
    expect(certainInventory(layout).map((r) => r.name)).toEqual(["alpha"]);
    expect(index(layout).digests).toHaveLength(1);
    // Same record, another (well-formed) signing seed: only the full check can see it does not derive signingKey.
    writeFileSync(layout.accountFile("alpha"), JSON.stringify({ ...alpha, signingSeed: mint("other").signingSeed }));
    freshProcess();
    let err: unknown;
    try {
      certainInventory(layout);
    } catch (e) {
      err = e;
    }
    expect(isCotalError(err, "corrupt-record")).toBe(true);
    expect((err as Error).message).toMatch(/signing seed does not derive/);
  });

  it("unchanged bytes are not re-derived: an index entry is what spares the check (so the index is as trusted as auth/)", () => {
    const layout = layoutWith();
    const alpha = mint("alpha");
    const bad = JSON.stringify({ ...alpha, signingSeed: mint("other").signingSeed });
    writeFileSync(layout.accountFile("alpha"), bad);
    mkdirSync(layout.runDir, { recursive: true });
    writeFileSync(recordIndexFile(layout), JSON.stringify({ format: "cotal.validated-records/1", digests: [recordDigest("space", "alpha", bad)] }));
    freshProcess();
    expect(certainInventory(layout).map((r) => r.name)).toEqual(["alpha"]);
    // A torn index is an empty one: everything is checked again.
    writeFileSync(recordIndexFile(layout), "{\"format\":");
    freshProcess();
    expect(() => certainInventory(layout)).toThrow(expect.objectContaining({ code: "corrupt-record" }));
  });

  it("a removed tenant drops out of the index on the next scan", () => {
    const layout = layoutWith();
    for (const n of ["alpha", "beta"]) saveSpaceAccount(layout, mint(n));
    certainInventory(layout);
    expect(index(layout).digests).toHaveLength(2);
    rmSync(layout.accountFile("beta"));
    freshProcess();
    expect(certainInventory(layout).map((r) => r.name)).toEqual(["alpha"]);
    expect(index(layout).digests).toEqual([recordDigest("space", "alpha", readFileSync(layout.accountFile("alpha"), "utf8"))]);
  });
});
