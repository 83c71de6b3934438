import { resolve } from "node:path";
import type { MaintenanceProgress } from "@cotal/core";
import { assertSpaceName } from "@cotal/core/light";
import { queuedSingle } from "./space-queue.js";
import type { Command } from "commander";
import { guardsOf, rootOf } from "../context.js";
import { json, out } from "../output.js";
import { usageError } from "@cotal/core/errors";
import { feedbackFor, type Feedback } from "../feedback.js";
import { maintenanceStarting } from "../add-feedback.js";
import { confirmOrRefuse } from "../confirm.js";

/**
 * Byte progress of backup/restore onto the verb's feedback: a phase line at once (what runs before the
 * first bar: the lock, the journal, a quiesce), then the bar per phase, a log line per phase.
 */
function maintenanceProgress(fb: Feedback, verb: string, space: string): { update: (p: MaintenanceProgress) => void; notice: (m: string) => void; done: () => void } {
  let phase = "";
  maintenanceStarting(fb, verb, space);
  return {
    update(p) {
      const label = p.stream ? `${p.phase} ${p.stream}` : p.phase;
      if (label !== phase) {
        phase = label;
        fb.bar.phase(p.phase, p.total);
        fb.log?.info({ event: "phase", phase: p.phase, stream: p.stream ?? null, total: p.total }, `${label}`);
      }
      fb.bar.update(p.done, Math.max(p.total, p.done), p.stream ?? "");
    },
    notice(m) {
      if (phase === "") fb.bar.stop(); // the phase line, not a bar: the notice takes a line of its own
      process.stderr.write(`cotal: ${m}\n`);
    },
    done: () => fb.bar.stop(),
  };
}

/** Finds (or makes) a command group, so `space backup` joins the existing `space` group from this file. */
function group(program: Command, name: string, description: string): Command {
  return program.commands.find((c) => c.name() === name) ?? program.command(name).description(description);
}

interface RestoreFlags {
  from: string;
  rebindAccount?: boolean;
  replace?: boolean;
  yes?: boolean;
  queue?: boolean;
  wait: boolean;
  json?: boolean;
}

/**
 * `space restore --queue`: confirmed (for --replace) and the artifact read now, not when a worker
 * takes the job, so a refusal or a damaged artifact is answered before Redis hears of it.
 */
async function queuedRestore(name: string, flags: RestoreFlags, cmd: Command): Promise<void> {
  const space = assertSpaceName(name, guardsOf(cmd));
  const from = resolve(flags.from);
  if (flags.replace) await confirmOrRefuse({ yes: flags.yes, question: `Delete space ${space}'s streams that ${from} holds, then restore them from it?`, what: `--replace deletes space ${space}'s streams that the backup at ${from} holds, then restores them from it` });
  const [{ checkRestoreFrom }, { verifyArtifact }] = await Promise.all([import("@cotal/core"), import("@cotal/core/backup")]);
  verifyArtifact(checkRestoreFrom(flags.from));
  const item = { name: space, from, ...(flags.rebindAccount ? { rebindAccount: true } : {}), ...(flags.replace ? { replace: true, yes: true } : {}) };
  return queuedSingle(rootOf(cmd), "space-restore", item, { json: flags.json, wait: flags.wait }, async () => true);
}

/** `--every … --queue`: upsert one job scheduler; the workers run each backup (cut, back up, resume, prune). */
async function scheduleBackupCommand(root: string, space: string, flags: { out: string; every?: string; keep?: string; queue?: boolean; json?: boolean }): Promise<void> {
  if (!flags.queue || !flags.every) throw usageError(`space backup ${space}: a scheduled backup needs both --every and --queue`); // next: the verb's --help (its examples)
  const keep = flags.keep === undefined ? 7 : Number(flags.keep);
  if (!Number.isInteger(keep) || keep < 1) throw usageError(`--keep takes a whole number >= 1, got ${JSON.stringify(flags.keep)}`, "--keep 7");
  const { scheduleBackup, redisUrlFrom } = await import("@cotal/jobs");
  const r = await scheduleBackup({ root, space, out: flags.out, every: flags.every, keep, redisUrl: redisUrlFrom(process.env) });
  if (flags.json) return json(r);
  out(`cotal: scheduled backups of ${space} (${"pattern" in r.repeat ? `cron ${r.repeat.pattern}` : `every ${r.repeat.every / 1000}s`}) into ${r.out}, keeping ${keep}; scheduler ${r.schedulerId}${r.next ? `, next run ${r.next}` : ""}`);
  out("  next: cotal worker   # a worker on this host runs them; `cotal jobs schedules` lists them with each last run");
}

export function registerBackup(program: Command): void {
  const space = group(program, "space", "per-space lifecycle verbs");
  registerSpaceBackup(space);
  registerSpaceRestore(space);
  registerClean(group(program, "clean", "remove provable residue of interrupted maintenance"));
}

function registerSpaceBackup(space: Command): void {
  space
    .command("backup <name>")
    .description("per-space backup: live on a running broker (the tenant keeps working; each stream consistent at its own snapshot), --quiesce for one moment across streams, else offline after `cotal down --preserve-state`; native stream snapshots, manifest.json written last")
    .requiredOption("--out <dir>", "artifact directory to create (must not exist); with --queue, the directory dated artifacts go in")
    .option("--every <cron|duration>", "with --queue: a cron pattern (\"0 3 * * *\") or a duration (6h, 1d)")
    .option("--keep <n>", "with --queue: complete artifacts to keep (default: 7)")
    .option("--quiesce", "online: every stream at one moment; the tenant's users are refused (disconnected) while its streams are read (docs/backup.md)")
    .option("--queue", "schedule it as a BullMQ job scheduler instead of running it now")
    .option("--json", "print the result as JSON")
    .action(async (name: string, flags: { out: string; every?: string; keep?: string; queue?: boolean; quiesce?: boolean; json?: boolean }, cmd: Command) => {
      if (flags.queue || flags.every || flags.keep) return scheduleBackupCommand(rootOf(cmd), name, flags);
      const { spaceBackup } = await import("@cotal/core");
      const bar = maintenanceProgress(await feedbackFor(cmd, { verb: "space backup", json: flags.json, unit: "bytes" }), "space backup", name);
      const t0 = Date.now();
      try {
        const r = await spaceBackup({ root: rootOf(cmd), guards: guardsOf(cmd), space: name, out: flags.out, ...(flags.quiesce ? { quiesce: true } : {}), onProgress: bar.update, onNotice: bar.notice });
        bar.done();
        if (flags.json) return json(r);
        out(`cotal: backed up space ${r.space} to ${r.out} ${r.mode === "online" ? "online " : ""}(${r.streams.length} stream(s), ${(r.bytes / 1_048_576).toFixed(2)} MB in ${((Date.now() - t0) / 1000).toFixed(1)} s; account ${r.accountPublicKey})`);
        if (r.excluded.length > 0) out(`  excluded (ttl, recreated empty on restore): ${r.excluded.join(", ")}`);
        if (r.mode === "online" && flags.quiesce) out(`  the tenant's clients were refused while its streams were read and may connect again now`);
        else if (r.mode === "online") out(`  live: the tenant kept working; each stream is whole as of its own snapshot (per-stream; --quiesce for one moment across streams)`);
        else out("  next: cotal up   # resumes the preserved store");
      } finally {
        bar.done();
      }
    });
}

function registerSpaceRestore(space: Command): void {
  space
    .command("restore <name>")
    .description("per-space restore: online on a running broker (only this tenant quiesced), into its empty namespace or with --replace over its streams; else offline after `cotal down --preserve-state`")
    .requiredOption("--from <dir>", "artifact directory written by `cotal space backup`")
    .option("--rebind-account", "accept an artifact pinned to a different account key for this space")
    .option("--replace", "online: delete the space's streams the artifact holds, then restore them (needs --yes)")
    .option("--yes", "confirm --replace")
    .option("--queue", "run it through `cotal worker` (online on the running broker, --replace --yes too; a re-delivered job never restores twice) and follow it")
    .option("--no-wait", "with --queue: return once the job is enqueued")
    .option("--json", "print the result as JSON")
    .action(async (name: string, flags: RestoreFlags, cmd: Command) => {
      if (flags.queue) return queuedRestore(name, flags, cmd);
      const { spaceRestore } = await import("@cotal/core");
      const bar = maintenanceProgress(await feedbackFor(cmd, { verb: "space restore", json: flags.json, unit: "bytes" }), "space restore", name);
      try {
        const r = await spaceRestore({
          root: rootOf(cmd),
          guards: guardsOf(cmd),
          space: name,
          from: flags.from,
          ...(flags.rebindAccount ? { rebindAccount: true } : {}),
          ...(flags.replace ? { replace: true } : {}),
          ...(flags.yes ? { yes: true } : {}),
          onProgress: bar.update,
          onNotice: bar.notice,
        });
        bar.done();
        if (flags.json) return json(r);
        out(`cotal: restored space ${r.space} from ${r.from}${r.mode === "online" ? " online" : ""}${r.rebound ? ` (rebound from account ${r.artifactAccountPublicKey} to ${r.accountPublicKey})` : ""}`);
        for (const s of r.streams) out(`  ${s.name.padEnd(32)} ${s.messages} messages, last seq ${s.last_seq}, ${s.consumers} consumer(s)`);
        if (r.mode === "online") out("  the tenant's clients were refused while its streams were restored and may connect again now");
        else out("  next: cotal up   # resumes the broker on the restored store");
      } finally {
        bar.done();
      }
    });
}

function registerClean(clean: Command): void {
  clean
    .command("orphan-streams")
    .description("list (and with --yes delete, broker stopped) store streams of accounts no record vouches for")
    .option("--yes", "delete them")
    .option("--json", "print the result as JSON")
    .action(async (flags: { yes?: boolean; json?: boolean }, cmd: Command) => {
      const { cleanOrphanStreams } = await import("@cotal/core");
      const r = await cleanOrphanStreams({ root: rootOf(cmd), guards: guardsOf(cmd), yes: flags.yes });
      if (flags.json) return json(r);
      if (r.orphans.length === 0) return out("cotal: no orphan streams in the store; nothing changed");
      out(`cotal: deleted the store directories of ${r.removed.length} account(s) no record vouches for:`);
      for (const o of r.orphans) out(`  ${o.account}: ${o.streams.join(", ")}`);
    });
  clean
    .command("restore-attempt")
    .description("remove only what an interrupted backup/restore attempt provably created, and release its claim")
    .requiredOption("--attempt <id>", "the attempt id named by the refusal")
    .option("--json", "print the result as JSON")
    .action(async (flags: { attempt: string; json?: boolean }, cmd: Command) => {
      const { cleanRestoreAttempt } = await import("@cotal/core");
      const r = await cleanRestoreAttempt({ root: rootOf(cmd), guards: guardsOf(cmd), attempt: flags.attempt });
      if (flags.json) return json(r);
      if (r.outcome === "absent") return out(`cotal: no attempt ${r.attemptId} is recorded; nothing changed`);
      out(`cotal: cleaned attempt ${r.attemptId}: removed ${r.removed.length} path(s), ${r.deletedStreams.length} installed stream(s), killed ${r.killed.length} broker(s)`);
    });
}
