import type { Command } from "commander";
import type { BackupScheduleEntry, JobsStatusReport } from "@cotal/jobs";
import { assertSpaceName } from "@cotal/core/light";
import { guardsOf, rootOf } from "../context.js";
import { json, out } from "../output.js";

/** A run as one phrase: when it ended and how, a failure with its reason (the dashboard says the same). */
function runText(s: BackupScheduleEntry): string {
  const r = s.lastRun;
  if (!r) return "no run recorded yet";
  if (r.outcome === "failed") return `last run FAILED at ${r.at}: ${r.error ? `[${r.error.code}] ${r.error.message}` : (r.reason ?? "")}`;
  if (r.outcome === "skipped") return `last run skipped at ${r.at}: ${r.reason ?? ""}`;
  return `last run succeeded at ${r.at}${r.artifact ? `: ${r.artifact}` : ""}`;
}

function printSchedules(schedules: readonly BackupScheduleEntry[], indent = ""): void {
  for (const s of schedules) {
    out(`${indent}${s.space}: ${s.cadence} into ${s.out ?? "?"}, keep ${s.keep ?? "default"}; next run ${s.next ?? "—"}`);
    out(`${indent}  ${runText(s)}`);
    if (s.lastRun?.outcome === "failed" && s.lastRun.error?.next) out(`${indent}  next: ${s.lastRun.error.next}`);
    if (s.lastRun?.outcome !== "succeeded") out(`${indent}  last success: ${s.lastSuccess ? `${s.lastSuccess.at} (${s.lastSuccess.artifact})` : "none recorded"}`);
  }
}

function printJobsStatus(s: JobsStatusReport): void {
  out(`root:  ${s.root} (${s.rootKey})`);
  out(`redis: ${s.redis}`);
  const states = ["waiting", "active", "delayed", "prioritized", "completed", "failed"] as const;
  out(`${"queue".padEnd(14)} ${"workers".padStart(7)} ${states.map((x) => x.padStart(11)).join(" ")}`);
  for (const q of s.queues) out(`${q.type.padEnd(14)} ${String(q.workers).padStart(7)} ${states.map((x) => String(q.counts[x]).padStart(11)).join(" ")}${q.processed ? "" : "  (no processor yet)"}`);
  for (const q of s.queues) for (const f of q.failed) out(`  FAILED ${q.type} ${f.space ?? f.id} after ${f.attemptsMade} attempt(s)${f.failedAt ? ` at ${f.failedAt}` : ""}: ${f.reason}`);
  if (s.schedules.length > 0) {
    out("backup schedules:");
    printSchedules(s.schedules, "  ");
  }
  const failed = s.queues.reduce((n, q) => n + q.counts.failed, 0);
  const pending = s.queues.reduce((n, q) => n + q.counts.waiting + q.counts.active + q.counts.delayed + q.counts.prioritized, 0);
  const failedAdds = s.queues.filter((q) => q.type === "space-add").flatMap((q) => q.failed.map((f) => f.space)).filter((x): x is string => x !== null);
  if (failedAdds.length > 0) out(`  next: cotal space add ${[...new Set(failedAdds)].join(" ")} --queue   # once the cause above is fixed; present spaces are no-op successes`);
  else if (failed > 0) out("  next: cotal jobs status --json   # reasons in full; fix the cause, then re-run the enqueuing command (it re-queues only what failed)");
  else if (pending > 0 && s.queues.every((q) => q.workers === 0)) out("  next: cotal worker   # jobs are waiting and no worker is attached");
}

export function registerJobs(program: Command): void {
  const jobs = program.command("jobs").description("the BullMQ queues that schedule lifecycle verbs (Redis from $REDIS_URL)");
  jobs
    .command("status")
    .description("jobs per state per queue of this root, attached workers, failed jobs with reasons, each backup schedule's last run")
    .option("--json", "print the report as JSON")
    .action(async (flags: { json?: boolean }, cmd: Command) => {
      const { jobsStatus, redisUrlFrom } = await import("@cotal/jobs"); // lazy: only jobs verbs load ioredis
      const s = await jobsStatus({ root: rootOf(cmd), redisUrl: redisUrlFrom(process.env) });
      if (flags.json) json(s);
      else printJobsStatus(s);
    });
  jobs
    .command("schedules")
    .description("every backup schedule of this root: space, cadence, directory, keep, next run, last run and its outcome, last success")
    .option("--json", "print the list as JSON")
    .action(async (flags: { json?: boolean }, cmd: Command) => {
      const { listSchedules, redisUrlFrom } = await import("@cotal/jobs");
      const r = await listSchedules({ root: rootOf(cmd), redisUrl: redisUrlFrom(process.env) });
      if (flags.json) return json(r);
      if (r.schedules.length === 0) return out(`cotal: no backup schedules on ${r.root} (Redis ${r.redis})`);
      printSchedules(r.schedules);
    });
  jobs
    .command("unschedule <space>")
    .description("remove a space's backup schedule (and the runs it queued that have not started); an absent one is a no-op success")
    .option("--json", "print the result as JSON")
    .action(async (space: string, flags: { json?: boolean }, cmd: Command) => {
      const name = assertSpaceName(space, guardsOf(cmd)); // a bad name is refused before Redis is asked
      const { unscheduleBackup, redisUrlFrom } = await import("@cotal/jobs");
      const r = await unscheduleBackup({ root: rootOf(cmd), space: name, redisUrl: redisUrlFrom(process.env), guards: guardsOf(cmd) });
      if (flags.json) return json(r);
      if (r.outcome === "absent") return out(`cotal: space ${name} has no backup schedule on this root; nothing changed`);
      out(`cotal: removed the backup schedule of ${name} (${r.schedulers.join(", ")})${r.droppedJobs > 0 ? `; dropped ${r.droppedJobs} queued run(s) that had not started` : ""}`);
    });
}
