import { GUARDS_ON, type Guards } from "../guards.js";
import { copyFileSync, mkdirSync, rmSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { CotalError, isCotalError } from "../errors.js";
import { failpoint } from "../failpoints.js";
import { assertSpaceName } from "../names.js";
import { withVerb } from "../verb/verb.js";
import { loadSpaceAccount } from "../root/account-store.js";
import { RootLayout } from "../root/layout.js";
import { verifyArtifact, type BackupManifest } from "./artifact.js";
import { verifyRestoreFrom } from "./artifact-paths.js";
import { Attempt, cloneSpaceStore } from "./attempt.js";
import { requireReadyCut } from "./cut.js";
import { typedPrivateBrokerFailure } from "../broker/private-broker.js";
import { canonicalRoot } from "../root/canonical-root.js";
import { assertJournalAllows, restoreRerun, type JournalPolicy, type QuiesceEntry } from "../journal/journal.js";
import { runRestorePass } from "./restore-pass.js";
import { recoverAttempt } from "./clean.js";
import { brokerState } from "../broker/runtime.js";
import { spaceRestoreOnline } from "./online-restore.js";
import { refuseOfflineOnCluster } from "../verb/cluster-offline.js";
import type { SpaceRestoreOptions, SpaceRestoreResult } from "./backup-contract.js";

export type { SpaceRestoreOptions, SpaceRestoreResult } from "./backup-contract.js";

/**
 * The journal check of the offline path. A stopped online restore's entry is finished online only
 * (its re-run takes it over through the running broker): with the broker stopped, naming the re-run
 * would send the operator straight back here, so the way out is the `up` that lifts it first.
 */
function offlineJournalAllows(layout: RootLayout, policy: JournalPolicy, guards: Guards): void {
  try {
    assertJournalAllows(layout, policy, guards);
  } catch (err) {
    const entry = isCotalError(err, "journal-blocked") ? (err.details?.journal as QuiesceEntry | undefined) : undefined;
    if (entry?.op !== "quiesce" || entry.purpose !== "restore") throw err;
    throw new CotalError("broker-not-running", `an online restore of space ${entry.space} (${entry.stage}) was cut short and the broker is stopped; it is finished online only`, {
      next: `cotal up --detach   # lifts ${entry.space} first; then: ${restoreRerun(entry)}`,
      details: { journal: entry },
      cause: err,
    });
  }
}

/** Pins the bytes: the artifact copied into the attempt's own dir and the copies verified, the sole input from here on. */
function pinArtifact(attempt: Attempt, from: string, read: BackupManifest, space: string): { staged: string } & ReturnType<typeof verifyArtifact> {
  attempt.createDir("work", attempt.workDir);
  const staged = join(attempt.workDir, "artifact");
  for (const f of [...read.files.map((x) => x.path), "manifest.json"]) {
    mkdirSync(dirname(join(staged, f)), { recursive: true, mode: 0o700 });
    copyFileSync(join(from, f), join(staged, f));
  }
  const verified = verifyArtifact(staged);
  if (JSON.stringify(verified.manifest) !== JSON.stringify(read)) {
    throw new CotalError("artifact-invalid", `${from} changed while it was being read; nothing was changed`, { next: `cotal space restore ${space} --from ${from}` });
  }
  return { staged, ...verified };
}

/**
 * `cotal space restore <name> --from DIR` (docs/lifecycle.md "Backup and restore"): offline after a ready cut, into an empty
 * namespace of an existing space (trust comes from `space add`, never from the artifact). Verifies
 * the artifact, pins its bytes into the attempt's work dir, rehearses on a quarantine clone, then
 * installs on the real store through a private broker.
 */
export async function spaceRestore(opts: SpaceRestoreOptions): Promise<SpaceRestoreResult> {
  const guards = opts.guards ?? GUARDS_ON;
  const space = assertSpaceName(opts.space, guards);
  const from = resolve(opts.from);
  const layout = new RootLayout(canonicalRoot(opts.root));
  // A running broker restores online (only that tenant quiesced); a stopped one through its cut.
  if (opts.mode !== "offline" && brokerState(layout).running) return spaceRestoreOnline({ ...opts, guards });
  refuseOfflineOnCluster(layout, guards, `space restore ${space}`, "is online only (offline, it installs into a preserved store through a private broker)");
  const journal = { verb: "space restore offline" as const };
  offlineJournalAllows(layout, journal, guards); // a standing removal names itself before any input check
  if (opts.replace) {
    throw new CotalError("invalid-argument", "--replace restores over a space's streams on a running broker only", { next: `cotal up --detach && cotal space restore ${space} --from ${from} --replace --yes` });
  }
  const progress = opts.onProgress ?? (() => undefined);
  // Read-only verification first: a truncated or tampered artifact refuses before any write.
  const first = verifyRestoreFrom(from, (n) => progress({ phase: "verify", done: n, total: n }));
  if (first.manifest.space !== space) {
    throw new CotalError("artifact-invalid", `${from} is a backup of space ${first.manifest.space}, not ${space}`, { next: `cotal space restore ${first.manifest.space} --from ${from}` });
  }
  // The lock, the reaping of leaked brokers and the journal: the one preamble (verb/verb.ts); the
  // space's own record is read below, so a sibling's unreadable record does not block its restore.
  return withVerb({ root: layout.root, guards, purpose: `cotal space restore ${space}`, journal, lockWaitMs: opts.lockWaitMs ?? 30_000, certain: false }, async ({ lock }) => {
    const cut = requireReadyCut(layout, "space restore", guards);
    const account = loadSpaceAccount(layout, space);
    if (!account) {
      throw new CotalError("space-not-found", `space ${space} does not exist on ${layout.root}; restore fills an existing space's empty namespace`, {
        next: `cotal up && cotal space add ${space} && cotal down --preserve-state   # then restore again`,
      });
    }
    const pinned = first.manifest.accountPublicKey;
    if (pinned !== account.publicKey && !opts.rebindAccount) {
      throw new CotalError("account-mismatch", `the backup pins account ${pinned} for space ${space}, but ${space} is now account ${account.publicKey}`, {
        next: `cotal space restore ${space} --from ${from} --rebind-account   # if the new account is meant to receive this data`,
        details: { artifactAccount: pinned, currentAccount: account.publicKey },
      });
    }
    const attempt = Attempt.claim(layout, lock, cut, "restore", space);
    try {
      const { staged, manifest, checkpoints } = pinArtifact(attempt, from, first.manifest, space);
      attempt.stage("quarantine");
      const quarantine = join(attempt.workDir, "quarantine");
      await cloneSpaceStore(layout.storeDir, quarantine, account.publicKey, guards); // only this tenant's account directory
      const rehearsed = await runRestorePass(layout, "quarantine", quarantine, account, staged, manifest, checkpoints, attempt, progress, guards);
      if (!rehearsed) throw new CotalError("restore-verify-failed", "the quarantine pass produced no re-snapshot", { next: `cotal space restore ${space} --from ${from}` });
      rmSync(quarantine, { recursive: true, force: true });
      await failpoint("restore-quarantine-done");
      attempt.stage("target");
      await runRestorePass(layout, "target", layout.storeDir, account, rehearsed.artifactDir, rehearsed.manifest, checkpoints, attempt, progress, guards);
      await failpoint("restore-target-done");
      rmSync(attempt.workDir, { recursive: true, force: true });
      attempt.release();
      return {
        mode: "offline" as const,
        space,
        from,
        attemptId: attempt.id,
        accountPublicKey: account.publicKey,
        artifactAccountPublicKey: pinned,
        rebound: pinned !== account.publicKey,
        streams: manifest.streams.map((s) => ({ name: s.name, messages: s.state.messages, last_seq: s.state.last_seq, consumers: s.state.consumer_count })),
        recreatedEmpty: manifest.excluded.map((e) => e.name),
      };
    } catch (err) {
      // Before the target pass nothing outside our work dir changed: fail closed to `ready`. After
      // it began, the claim (with its journaled installs) stays for `cotal clean restore-attempt`.
      const claim = attempt.claim();
      if (claim?.stage !== "target") attempt.abandon();
      else await recoverAttempt(layout, lock, claim, guards).catch(() => undefined);
      throw typedPrivateBrokerFailure(err, `cotal space restore ${space} --from ${from}${opts.rebindAccount ? " --rebind-account" : ""}   # run it again`);
    }
  });
}
