import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createAccountTrust, createKeyPair, mintUserCreds } from "@cotal/core/trust";
import { credsViewOf, readCredsViews } from "../src/creds-view.js";

const operator = createKeyPair("operator");
const account = createAccountTrust(operator, "alpha", { kind: "space" });
const file = { user: "app", kind: "user" as const, path: "/r/users/app.creds" };

describe("creds minted, as the tenant page shows them", () => {
  it("decodes minted and expiry from the JWT, and returns nothing of the seed", () => {
    const c = mintUserCreds(account, { name: "app", expiresInSeconds: 7200, issuedAt: 1_900_000_000 });
    const v = credsViewOf(file, c.creds, new Date(1_900_000_100 * 1000));
    expect(v).toEqual({ ...file, issuedAt: new Date(1_900_000_000_000).toISOString(), expiresAt: new Date((1_900_000_000 + 7200) * 1000).toISOString(), status: "valid" });
    expect(JSON.stringify(v)).not.toContain(c.seed);
    expect(credsViewOf(file, c.creds, new Date((1_900_000_000 + 7200) * 1000)).status).toBe("expired");
  });

  it("a creds file that never expires reads never (null); a broken one is unreadable with why, not a crash", () => {
    const c = mintUserCreds(account, { name: "app" });
    expect(credsViewOf(file, c.creds).expiresAt).toBeNull();
    const broken = credsViewOf(file, "not a creds file");
    expect(broken).toMatchObject({ status: "unreadable", issuedAt: null, expiresAt: null });
    expect(broken.error).toMatch(/unable to parse credentials/);
  });

  it("reads each file; a missing one is unreadable with its errno", () => {
    const dir = mkdtempSync(join(tmpdir(), "cotal-creds-"));
    try {
      writeFileSync(join(dir, "a.creds"), mintUserCreds(account, { name: "a", expiresInSeconds: 60 }).creds);
      const views = readCredsViews([{ user: "a", kind: "user", path: join(dir, "a.creds") }, { user: "b", kind: "user", path: join(dir, "b.creds") }]);
      expect(views.map((v) => [v.user, v.status])).toEqual([["a", "valid"], ["b", "unreadable"]]);
      expect(views[1]?.error).toBe("ENOENT");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
