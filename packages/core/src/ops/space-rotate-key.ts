/**
 * `cotal space rotate-key <space> [--keep-old DURATION | --finish]` (docs/commands/space.md "space
 * rotate-key"): a new signing key added to the space's account JWT (op "rotate-key" through the saga:
 * claimed, rendered, reloaded with proof, committed), cotal's own creds of the space re-signed with
 * it, then the old key removed by a second proven change, at once or, with --keep-old, by a later
 * --finish. The rotation is staged on disk first (root/key-rotation.ts), so a re-run finishes it.
 */
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { GUARDS_ON } from "../guards.js";
import { CotalError } from "../errors.js";
import { failpoint } from "../failpoints.js";
import { assertSpaceName } from "../names.js";
import { loadSpaceAccount, saveSpaceAccount } from "../root/account-store.js";
import { appendLedgerEntry, entryOfUserJwt } from "../root/creds-ledger.js";
import { clearKeyRotation, readKeyRotation, writeKeyRotation, type KeyRotation } from "../root/key-rotation.js";
import type { RootLayout } from "../root/layout.js";
import type { AccountRecord } from "../root/records.js";
import { readTextIfExists, writeFileAtomic } from "../root/secret-files.js";
import { resignSource, settledRecord } from "../saga/resign-base.js";
import { runMutation, type DiskView, type MutationResult, type SagaEnv } from "../saga/mutation.js";
import type { VersionedRecord } from "../inventory/inventory-store.js";
import { decodeJwt, parseCreds } from "../trust/index.js";
import { createKeyPair } from "../trust/nkeys.js";
import { accountSigningKeys, reissueUserCreds, resignSigningKeys } from "../trust/signing-keys.js";
import { isRevoked, userRevocations } from "../trust/user-revocations.js";
import type { SessionHooks } from "../verb/session.js";
import { withLiveVerb } from "../verb/verb.js";

export interface SpaceRotateKeyOptions extends SessionHooks {
  root: string;
  name: string;
  /** Keep the old key in the account JWT this long after the new one is in (seconds); `--finish` removes it. */
  keepOldSeconds?: number;
  /** Remove the old key of the rotation in progress now (its --keep-old grace cut short, or an interrupted removal finished). */
  finish?: boolean;
  lockWaitMs?: number;
}

/**
 * rotated: both changes proven, the old key is out. keeping-old: the new key is in and cotal's creds
 * use it; the old key stays until --finish. finished: --finish removed the old key. noop: --finish
 * with no rotation in progress.
 */
export type RotateKeyOutcome = "rotated" | "keeping-old" | "finished" | "noop";

export interface SpaceRotateKeyResult {
  space: string;
  outcome: RotateKeyOutcome;
  oldKey?: string;
  newKey?: string;
  keepOldUntil?: string;
  generation: number;
  /** The proven changes this run committed (0-2). */
  changes: number;
  reloads: number;
  /** Creds files under the root re-signed with the new key by this run. */
  reminted: string[];
  /** This run continued a rotation an earlier run staged (interrupted, or kept old). */
  continued: boolean;
  /** A claim a killed writer left was settled first (docs/resume.md). */
  resumed: boolean;
}

/** Where a rotation stands, read from its staged file and the account record (pure; status names it). */
export type RotationStage = "adding" | "re-minting" | "keeping-old" | "removing" | "removed";

/**
 * A staged rotation whose keys the account JWT lists neither of belongs to another account (the space
 * removed and added again since): it is discarded, never finished against the new account. Pure.
 */
export function staleRotation(r: KeyRotation, jwt: string): boolean {
  const keys = accountSigningKeys(jwt);
  return !keys.includes(r.oldKey) && !keys.includes(r.newKey);
}

export function rotationStage(r: KeyRotation, rec: Pick<AccountRecord, "jwt" | "signingKey">): RotationStage {
  const keys = accountSigningKeys(rec.jwt);
  if (!keys.includes(r.newKey)) return "adding";
  if (rec.signingKey !== r.newKey || !r.reminted) return "re-minting";
  if (!keys.includes(r.oldKey)) return "removed";
  return r.keepOldUntil !== undefined ? "keeping-old" : "removing";
}

/** The command that moves a rotation on from `stage` (status's next; the root is named by the caller). */
export function rotationNext(space: string, stage: RotationStage): string {
  return stage === "keeping-old" ? `cotal space rotate-key ${space} --finish   # removes the old signing key now` : `cotal space rotate-key ${space}   # finishes the interrupted rotation`;
}

/**
 * Every creds file under the space's users/ signed by `oldKey` re-signed by the record's (new) key,
 * with a ledger line each: a revoked or expired cred is left as it is (re-issuing would revive it).
 */
export function remintRootCreds(layout: RootLayout, space: string, account: AccountRecord, oldKey: string, now = Date.now()): string[] {
  const dir = join(layout.spaceDir(space), "users");
  let files: string[];
  try {
    files = readdirSync(dir).filter((f) => f.endsWith(".creds")).sort();
  } catch {
    return [];
  }
  const revocations = userRevocations(account.jwt);
  const nowS = Math.floor(now / 1000);
  const done: string[] = [];
  for (const f of files) {
    const path = join(dir, f);
    let parsed: { jwt: string; seed: string };
    try {
      parsed = parseCreds(readTextIfExists(path) ?? "");
    } catch {
      continue; // not a creds file cotal can read: nothing of ours to move
    }
    const c = decodeJwt(parsed.jwt);
    if (c.iss !== oldKey || (c.exp !== undefined && c.exp <= nowS) || isRevoked(revocations, c.sub, c.iat)) continue;
    const re = reissueUserCreds(account, parsed.jwt, parsed.seed, nowS);
    appendLedgerEntry(layout, space, entryOfUserJwt(re.jwt, path));
    writeFileAtomic(path, re.creds);
    done.push(path);
  }
  return done;
}

function refuseKeepWithFinish(opts: SpaceRotateKeyOptions): void {
  if (opts.keepOldSeconds !== undefined && (!Number.isSafeInteger(opts.keepOldSeconds) || opts.keepOldSeconds <= 0)) {
    throw new CotalError("invalid-argument", `--keep-old must be a positive duration, got ${String(opts.keepOldSeconds)}`, { next: "cotal space rotate-key --help   # the duration forms --keep-old takes" });
  }
  if (opts.keepOldSeconds !== undefined && opts.finish) {
    throw new CotalError("invalid-argument", "--keep-old starts a rotation and --finish ends one; name one of them", { next: "cotal space rotate-key --help" });
  }
}

/** One proven re-sign of the space's account JWT: `change` applied to the record's JWT as it is now. */
async function resignKeys(env: SagaEnv, space: string, change: { add?: string; remove?: string }, keepOldKey: boolean, base?: VersionedRecord, view?: DiskView): Promise<MutationResult> {
  const { broker, rec } = resignSource(env.layout, space, base);
  // SKIP_SIGNING_KEY_REMOVAL: the rotate-key cell's positive control, the removal re-signs the JWT with the old key left in.
  const to = resignSigningKeys(broker.operator, rec.jwt, keepOldKey ? { ...change, remove: undefined } : change).jwt;
  return runMutation(env, { op: "rotate-key", verb: "space rotate-key", keyChange: { space, from: rec.jwt, to } }, base, view);
}

function unproven(space: string, r: MutationResult): CotalError {
  return new CotalError("reload-unproven", `the signing-key change of space ${space} was ${r.outcome}, not committed; the rotation stays staged`, { next: `cotal space rotate-key ${space}` });
}

export async function spaceRotateKey(opts: SpaceRotateKeyOptions): Promise<SpaceRotateKeyResult> {
  const guards = opts.guards ?? GUARDS_ON;
  const name = assertSpaceName(opts.name, guards);
  refuseKeepWithFinish(opts);
  return withLiveVerb({ ...opts, guards, purpose: `cotal space rotate-key ${name}`, journal: { verb: "space rotate-key" }, lockWaitMs: opts.lockWaitMs ?? 30_000 }, ({ lock, session, decided, view }) =>
    rotateKey(session.envWith(lock), name, opts, decided, view),
  );
}

/**
 * The rotation itself, on any saga environment (the running broker's, or the in-memory one of the
 * units): settle a claim a killed writer left, stage or continue the rotation, then each step that
 * is still owed, in order; every step is idempotent, so a re-run after a kill converges.
 */
export async function rotateKey(env: SagaEnv, name: string, opts: Pick<SpaceRotateKeyOptions, "keepOldSeconds" | "finish" | "onNotice">, decided?: VersionedRecord, view?: DiskView): Promise<SpaceRotateKeyResult> {
  const { layout, guards } = env;
  const settled = await settledRecord(env, "space rotate-key", decided);
  const base = settled.base ?? decided;
  const records = settled.resumed || !view ? undefined : view;
  const { rec } = resignSource(layout, name, base);
  const found = readKeyRotation(layout, name);
  if (found && staleRotation(found, rec.jwt)) clearKeyRotation(layout, name);
  const staged = found && !staleRotation(found, rec.jwt) ? found : undefined;
  const generation0 = base?.record.generation ?? 0;
  if (!staged && opts.finish) return { space: name, outcome: "noop", generation: generation0, changes: 0, reloads: 0, reminted: [], continued: false, resumed: settled.resumed };
  const rotation = staged ?? stageRotation(layout, name, rec, opts.keepOldSeconds);
  if (staged && opts.keepOldSeconds !== undefined) opts.onNotice?.(`a rotation of space ${name}'s signing key started ${staged.startedAt} is in progress; it is continued as it was started`);
  if (!staged) await failpoint("rotate-key-staged");
  const run = { generation: generation0, changes: 0, reloads: 0, resumed: settled.resumed };
  const count = (r: MutationResult): void => {
    if (r.outcome !== "committed") throw unproven(name, r);
    run.generation = r.generation;
    run.changes++;
    run.reloads += r.reloads;
    run.resumed ||= r.resumed !== undefined;
  };
  if (!accountSigningKeys(rec.jwt).includes(rotation.newKey)) count(await resignKeys(env, name, { add: rotation.newKey }, false, base, records));
  await failpoint("rotate-key-added");
  const reminted = await moveToNewKey(layout, name, rotation);
  const keys = { space: name, oldKey: rotation.oldKey, newKey: rotation.newKey, continued: staged !== undefined, reminted };
  if (rotation.keepOldUntil !== undefined && !opts.finish) return { ...keys, outcome: "keeping-old", keepOldUntil: rotation.keepOldUntil, ...run };
  const now = loadSpaceAccount(layout, name);
  if (now && accountSigningKeys(now.jwt).includes(rotation.oldKey)) count(await resignKeys(env, name, { remove: rotation.oldKey }, guards.SKIP_SIGNING_KEY_REMOVAL));
  clearKeyRotation(layout, name);
  return { ...keys, outcome: opts.finish ? "finished" : "rotated", ...run };
}

/** The rotation's new key and seed, durable before the account JWT changes. */
function stageRotation(layout: RootLayout, space: string, rec: AccountRecord, keepOldSeconds: number | undefined): KeyRotation {
  const key = createKeyPair("account");
  const now = Date.now();
  const rotation: KeyRotation = {
    format: "cotal.key-rotation/1",
    space,
    oldKey: rec.signingKey,
    newKey: key.publicKey,
    newSeed: key.seed,
    startedAt: new Date(now).toISOString(),
    ...(keepOldSeconds !== undefined ? { keepOldUntil: new Date(now + keepOldSeconds * 1000).toISOString() } : {}),
  };
  writeKeyRotation(layout, rotation);
  return rotation;
}

/** After the new key is proven in the JWT: the record signs with it, and cotal's own creds are re-signed (each step idempotent). */
async function moveToNewKey(layout: RootLayout, space: string, rotation: KeyRotation): Promise<string[]> {
  const rec = loadSpaceAccount(layout, space);
  if (!rec) throw new CotalError("space-not-found", `space ${space} has no record on disk`, { next: "cotal space list" });
  if (!accountSigningKeys(rec.jwt).includes(rotation.newKey)) {
    throw new CotalError("render-refused", `space ${space}'s account JWT does not list the new signing key ${rotation.newKey} after its change`, { next: `cotal space rotate-key ${space}` });
  }
  const signer = rec.signingKey === rotation.newKey ? rec : { ...rec, signingKey: rotation.newKey, signingSeed: rotation.newSeed };
  if (signer !== rec) saveSpaceAccount(layout, signer);
  await failpoint("rotate-key-signer");
  if (rotation.reminted) return [];
  const reminted = remintRootCreds(layout, space, signer, rotation.oldKey);
  writeKeyRotation(layout, { ...rotation, reminted: true });
  rotation.reminted = true;
  await failpoint("rotate-key-reminted");
  return reminted;
}
