import { describe, expect, it } from "vitest";
import type { SpaceUsersReport } from "@cotal/core";
import { EXIT } from "../src/index.js";
import { parseBefore, renderSpaceUsers } from "../src/commands/space-revoke.js";
import { runCli as run, scratchRoot } from "./helpers/cli.js";

// `space revoke` refuses bad flags with exit 2 before it reads the root or opens the broker, each with
// a `next:` that runs as printed (the root named). Nothing here reaches a broker.

const dir = scratchRoot("cotal-revoke-usage-");

const KEY = "UDXU4RCSJNZOIQHZNWXHXORDPRTGNJAHAHFRGZNEEJCPQTT2M7NLCNF4";

describe("space revoke: usage refusals (exit 2)", () => {
  it.each([
    [["space", "revoke", "alpha"], /exactly one of --user NAME and --key/, "space users alpha"],
    [["space", "revoke", "alpha", "--user", "a", "--key", KEY], /exactly one of/, "space users alpha"],
    [["space", "revoke", "alpha", "--key", "UNOTAKEY"], /not a user public key/, "space users alpha"],
    [["space", "revoke", "alpha", "--user", "a", "--before", "yesterday-ish"], /invalid --before/, "space revoke --help"],
    [["space", "revoke", "alpha", "--user", "a", "--force"], /--force goes with --key only/, "space revoke alpha --user a"],
  ])("%j", async (argv, message, next) => {
    const r = await run(["--root", dir, ...argv]);
    expect(r.code).toBe(EXIT.usage);
    expect(r.stderr).toMatch(message);
    expect(r.stderr).toContain(`next: cotal --root ${dir} ${next}`);
  });

  it("--before reads ISO 8601 and unix seconds", () => {
    expect(parseBefore("2026-12-01T00:00:00Z", "a")).toBe(Date.parse("2026-12-01T00:00:00Z") / 1000);
    expect(parseBefore("1700000000", "a")).toBe(1_700_000_000);
  });
});

describe("space users: the table", () => {
  it("names each cred's state, an unknown cred's origin and a replaced file", () => {
    const base = { iat: 1, issuedAt: "2026-01-01T00:00:00.000Z", permissions: {}, admin: false, path: "/r/u.creds", onDisk: true } as const;
    const r: SpaceUsersReport = {
      space: "alpha",
      unreadable: 0,
      users: [
        { ...base, user: "alice", publicKey: "UA", state: "revoked", source: "ledger", revokedAt: "2026-01-02T00:00:00.000Z", onDisk: false },
        { ...base, user: "old", publicKey: "UB", state: "active", source: "unknown (minted before the ledger)", expiresAt: "2027-01-01T00:00:00.000Z", admin: true },
      ],
    };
    const lines = renderSpaceUsers(r);
    expect(lines[0]).toMatch(/^USER\s+KEY\s+ISSUED\s+EXPIRES\s+ROLE\s+STATE\s+FILE$/);
    expect(lines[1]).toMatch(/^alice\s+UA\s+2026-01-01T00:00:00.000Z\s+never\s+user\s+revoked\s+\/r\/u.creds \(replaced or gone\)$/);
    expect(lines[2]).toMatch(/admin\s+active, unknown \(minted before the ledger\)/);
    expect(renderSpaceUsers({ space: "alpha", unreadable: 0, users: [] })).toEqual(["space alpha: no cred minted yet"]);
  });
});
