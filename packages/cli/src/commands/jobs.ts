import type { Command } from "commander";
import type { JobsStatusReport } from "@cotal/jobs";
import { rootOf } from "../context.js";
import { json, out } from "../output.js";

function printJobsStatus(s: JobsStatusReport): void {
  out(`root:  ${s.root} (${s.rootKey})`);
  out(`redis: ${s.redis}`);
  const states = ["waiting", "active", "delayed", "prioritized", "completed", "failed"] as const;
  out(`${"queue".padEnd(14)} ${"workers".padStart(7)} ${states.map((x) => x.padStart(11)).join(" ")}`);
  for (const q of s.queues) out(`${q.type.padEnd(14)} ${String(q.workers).padStart(7)} ${states.map((x) => String(q.counts[x]).padStart(11)).join(" ")}${q.processed ? "" : "  (no processor yet)"}`);
  for (const q of s.queues) for (const f of q.failed) out(`  FAILED ${q.type} ${f.space ?? f.id} after ${f.attemptsMade} attempt(s)${f.failedAt ? ` at ${f.failedAt}` : ""}: ${f.reason}`);
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
    .description("jobs per state per queue of this root, attached workers, failed jobs with reasons")
    .option("--json", "print the report as JSON")
    .action(async (flags: { json?: boolean }, cmd: Command) => {
      const { jobsStatus, redisUrlFrom } = await import("@cotal/jobs"); // lazy: only jobs verbs load ioredis
      const s = await jobsStatus({ root: rootOf(cmd), redisUrl: redisUrlFrom() });
      if (flags.json) json(s);
      else printJobsStatus(s);
    });
}
