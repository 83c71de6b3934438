import { existsSync, mkdirSync, readdirSync, renameSync, rmSync } from "node:fs";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { CotalError } from "../errors.js";
import { createAccountTrust, createBrokerTrust } from "../trust/index.js";
import { RootLayout } from "./layout.js";
import { saveBrokerTrust } from "./broker-store.js";
import { saveAuthorityAccount, saveSpaceAccount, toAccountRecord } from "./account-store.js";
import type { AccountRecord } from "./records.js";
import { ensureSecretDir } from "./secret-files.js";

export const AUTHORITY_ACCOUNT_NAME = "cotal-broker-authority";

export interface CreatedRoot {
  firstSpace: AccountRecord;
  authority: AccountRecord;
  multiSpace: boolean;
}

/**
 * Mints a root's whole trust in memory, writes it into a private staging directory, then renames
 * that directory to auth/: a crash leaves either no auth/ at all or a complete one, never a half root.
 */
export function createRootTrust(layout: RootLayout, firstSpace: string, opts: { multiSpace: boolean }): CreatedRoot {
  if (existsSync(layout.authDir)) {
    throw new CotalError("invalid-argument", `${layout.authDir} already exists; refusing to mint a second operator over it`, { next: "cotal status" });
  }
  const broker = createBrokerTrust({ retainSystemSigningSeed: opts.multiSpace });
  const authority = toAccountRecord(createAccountTrust(broker.operator, AUTHORITY_ACCOUNT_NAME, { kind: "authority" }));
  const space = toAccountRecord(createAccountTrust(broker.operator, firstSpace, { kind: "space" }));

  ensureSecretDir(layout.root);
  for (const stale of readdirSync(layout.root).filter((n) => n.startsWith(".auth.staging-"))) {
    rmSync(join(layout.root, stale), { recursive: true, force: true }); // a crashed earlier creation
  }
  const stagingRoot = join(layout.root, `.auth.staging-${randomBytes(6).toString("hex")}`);
  mkdirSync(stagingRoot, { mode: 0o700 });
  const staged = new RootLayout(stagingRoot);
  try {
    ensureSecretDir(staged.authDir);
    saveBrokerTrust(staged, broker, opts.multiSpace);
    saveAuthorityAccount(staged, authority);
    saveSpaceAccount(staged, space);
    renameSync(staged.authDir, layout.authDir);
  } finally {
    rmSync(stagingRoot, { recursive: true, force: true });
  }
  return { firstSpace: space, authority, multiSpace: opts.multiSpace };
}
