import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  certainInventory,
  createAccountTrust,
  createBrokerTrust,
  decodeJwt,
  recordRevokeAllBefore,
  resignAccountLimits,
  resignAccountRevocations,
  revokeAllBefore,
  RootLayout,
  saveSpaceAccount,
  status,
  toAccountRecord,
  type AccountRecord,
} from "../src/internal.js";
import { forgetParsedRecords } from "../src/root/account-store.js";
import { forgetLoadedIndexes, recordIndexFile } from "../src/root/record-index.js";
import { quiescedOnDisk } from "../src/backup/quiesce.js";
import { limitsOfClaims } from "../src/trust/limits.js";

// status decodes each account JWT once (the record's parse keeps its revocation beside it): the report
// and the records must be what decoding every JWT again gives, on the full check and on the index path.

const broker = createBrokerTrust({ retainSystemSigningSeed: false });
const mint = (n: string): AccountRecord => toAccountRecord(createAccountTrust(broker.operator, n, { kind: "space" }));

const made: string[] = [];
afterEach(() => made.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));

function rootWithTenants(): RootLayout {
  const dir = mkdtempSync(join(tmpdir(), "cotal-decode-"));
  made.push(dir);
  const layout = new RootLayout(join(dir, ".cotal"));
  mkdirSync(layout.authDir, { recursive: true });
  for (const n of ["alpha", "beta", "gamma", "delta"]) saveSpaceAccount(layout, mint(n));
  const quiet = mint("quiet");
  saveSpaceAccount(layout, { ...quiet, jwt: resignAccountRevocations(broker.operator, quiet.jwt, 1_800_000_000).jwt });
  const big = mint("big");
  const { jwt, limits } = resignAccountLimits(broker.operator, big.jwt, { disk_storage: 16 * 1024 * 1024, conn: 7 });
  saveSpaceAccount(layout, { ...big, jwt, limits });
  return layout;
}

const freshProcess = (): void => {
  forgetParsedRecords();
  forgetLoadedIndexes();
};

/** The records as the old reparse built them: the file's object spread, limits decoded from the JWT. */
function decodedAgain(layout: RootLayout, names: string[]): unknown[] {
  return names.map((n) => {
    const raw = JSON.parse(readFileSync(layout.accountFile(n), "utf8")) as AccountRecord;
    return { ...raw, limits: limitsOfClaims(decodeJwt(raw.jwt).nats) };
  });
}

describe("one JWT decode per record in a verb", () => {
  it("status and the records are byte-identical on the full check, the index path and warm, to decoding every JWT again", async () => {
    const layout = rootWithTenants();
    freshProcess();
    expect(existsSync(recordIndexFile(layout))).toBe(false);
    const full = JSON.stringify(await status({ root: layout.root })); // no index yet: every record checked in full
    freshProcess();
    const indexed = JSON.stringify(await status({ root: layout.root })); // the index written by the first: reparse path
    const warm = JSON.stringify(await status({ root: layout.root }));
    expect(indexed).toBe(full);
    expect(warm).toBe(full);

    const report = JSON.parse(full) as { quiesced: { space: string; source: string; revokeAllBefore: number }[]; spaces: { name: string }[] };
    expect(report.spaces.map((s) => s.name)).toEqual(["alpha", "beta", "big", "delta", "gamma", "quiet"]);
    // Positive control: exactly the quiesced tenant, with the time its JWT carries.
    expect(report.quiesced).toEqual([{ space: "quiet", source: "jwt", revokeAllBefore: 1_800_000_000, next: `cotal --root ${layout.root} up   # lifts it` }]);

    for (const path of ["full", "indexed"] as const) {
      if (path === "full") rmSync(recordIndexFile(layout), { force: true });
      freshProcess();
      const recs = certainInventory(layout);
      const names = recs.map((r) => r.name);
      expect(JSON.stringify(recs)).toBe(JSON.stringify(decodedAgain(layout, names)));
      expect(recs.find((r) => r.name === "big")?.limits).toMatchObject({ disk_storage: 16 * 1024 * 1024, conn: 7 });
      expect(recs.map((r) => recordRevokeAllBefore(r))).toEqual(recs.map((r) => revokeAllBefore(r.jwt)));
    }
  });

  it("a record not built by a parse (a fresh mint, a copy) has its JWT decoded on demand", () => {
    const rec = mint("solo");
    const quiet = { ...rec, jwt: resignAccountRevocations(broker.operator, rec.jwt, 1_900_000_000).jwt };
    expect(recordRevokeAllBefore(rec)).toBeUndefined();
    expect(recordRevokeAllBefore(quiet)).toBe(1_900_000_000);
    const layout = rootWithTenants();
    expect(quiescedOnDisk(layout, [rec, quiet, { ...quiet, name: "broken", jwt: "x.y.z" }])).toEqual([{ space: "solo", revokeAllBefore: 1_900_000_000 }]);
  });
});
