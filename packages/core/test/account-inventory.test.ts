import { mkdtempSync, writeFileSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { accountInventory, certainInventory, createAccountTrust, createBrokerTrust, isCotalError, RootLayout, saveSpaceAccount, spaceHex, toAccountRecord } from "../src/internal.js";

const broker = createBrokerTrust({ retainSystemSigningSeed: false });
const layoutWith = () => {
  const layout = new RootLayout(mkdtempSync(join(tmpdir(), "cotal-inv-")));
  mkdirSync(layout.authDir, { recursive: true });
  return layout;
};

describe("accountInventory", () => {
  it("returns the validated spaces sorted by name", () => {
    const layout = layoutWith();
    for (const n of ["gamma", "alpha", "beta"]) saveSpaceAccount(layout, toAccountRecord(createAccountTrust(broker.operator, n, { kind: "space" })));
    const inv = accountInventory(layout);
    expect(inv.corrupt).toEqual([]);
    expect(inv.spaces.map((s) => s.name)).toEqual(["alpha", "beta", "gamma"]);
  });

  it("never throws on one bad file: it reports it as corrupt and keeps the rest", () => {
    const layout = layoutWith();
    const good = toAccountRecord(createAccountTrust(broker.operator, "good", { kind: "space" }));
    saveSpaceAccount(layout, good);
    const other = toAccountRecord(createAccountTrust(broker.operator, "other", { kind: "space" }));
    writeFileSync(layout.accountFile("notjson"), "{");
    writeFileSync(layout.accountFile("renamed"), JSON.stringify(other)); // names "other", file says "renamed"
    writeFileSync(layout.accountFile("badseed"), JSON.stringify({ ...toAccountRecord(createAccountTrust(broker.operator, "badseed", { kind: "space" })), signingSeed: other.signingSeed }));
    writeFileSync(layout.accountFile("badjwt"), JSON.stringify({ ...toAccountRecord(createAccountTrust(broker.operator, "badjwt", { kind: "space" })), jwt: "x.y.z" }));
    writeFileSync(join(layout.authDir, "account.zz.json"), "{}");
    writeFileSync(join(layout.authDir, `account.${spaceHex("Upper")}.json`), "{}");
    const inv = accountInventory(layout);
    expect(inv.spaces.map((s) => s.name)).toEqual(["good"]);
    const reasons = Object.fromEntries(inv.corrupt.map((c) => [c.path.split("/").pop(), c.reason]));
    expect(Object.keys(reasons).sort()).toEqual([`account.${spaceHex("Upper")}.json`, `account.${spaceHex("badjwt")}.json`, `account.${spaceHex("badseed")}.json`, `account.${spaceHex("notjson")}.json`, `account.${spaceHex("renamed")}.json`, "account.zz.json"].sort());
    expect(reasons[`account.${spaceHex("renamed")}.json`]).toMatch(/names "other"/);
    expect(reasons[`account.${spaceHex("badseed")}.json`]).toMatch(/signing seed/);
  });

  it("certainInventory refuses on any corrupt record, naming every path", () => {
    const layout = layoutWith();
    writeFileSync(layout.accountFile("x"), "garbage");
    try {
      certainInventory(layout);
      expect.unreachable();
    } catch (e) {
      expect(isCotalError(e, "corrupt-record")).toBe(true);
      expect((e as Error).message).toContain(layout.accountFile("x"));
      expect((e as { next?: string }).next).toMatch(/repair or move aside/);
    }
  });

  it("an absent auth directory is an empty inventory", () => {
    const layout = new RootLayout(join(tmpdir(), "cotal-nothing-here-" + process.pid));
    expect(accountInventory(layout)).toEqual({ spaces: [], corrupt: [] });
  });
});
