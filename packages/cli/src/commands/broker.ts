import type { ReconcilePlan, ReconcileReport } from "@cotal/core";
import { errorDocument, isCotalError } from "@cotal/core/errors";
import type { Command } from "commander";
import { guardsOf, rootOf, sagaOf } from "../context.js";
import { err, json, out, reportContext } from "../output.js";
import { usageError } from "@cotal/core/errors";
import { ask, interactive, type PromptIo } from "../confirm.js";

function printReport(r: ReconcileReport): void {
  out(`disk (${r.disk.spaces.length}): ${r.disk.spaces.join(", ") || "(none)"}`);
  for (const c of r.disk.corrupt) out(`  CORRUPT ${c.path}: ${c.reason}`);
  if (r.kv) {
    out(`kv   (${r.kv.spaces.length}): ${r.kv.spaces.join(", ") || "(none)"}${r.kv.excluded?.length ? `   [excluded on purpose: ${r.kv.excluded.join(", ")}]` : ""}`);
    out(`      generation ${r.kv.generation}, appliedGeneration ${r.kv.appliedGeneration}, revision ${r.kv.revision}`);
    out(`      configDigest ${r.kv.configDigest ?? "null"}`);
    out(`      pending ${r.kv.pending ? JSON.stringify(r.kv.pending, null, 2).replace(/\n/g, "\n      ") : "null"}`);
  } else out("kv:  no inventory record");
  out(`disk-only: [${r.diskOnly.join(", ")}]`);
  out(`kv-only:   [${r.kvOnly.join(", ")}]`);
  out(`state:     ${r.state} — ${r.why}`);
  if (r.plan) printPlan(r.plan);
}

function printPlan(p: ReconcilePlan): void {
  const flag = `--adopt-${p.direction}`;
  if (p.evicts.length === 0) out(`${flag} evicts nobody.`);
  else {
    out(`${flag} will EVICT ${p.evicts.length} space${p.evicts.length === 1 ? "" : "s"} (their creds stop connecting immediately after the reload):`);
    for (const e of p.evicts) out(`    ${e.name.padEnd(20)} ${e.why}`);
  }
  if (p.admits.length > 0) out(`${flag} will ADMIT ${p.admits.length} space${p.admits.length === 1 ? "" : "s"} from disk: ${p.admits.join(", ")}`);
  out(`  The broker will preload: ${p.target.join(", ")}`);
}

async function typedConfirmation(p: ReconcilePlan): Promise<boolean> {
  const io: PromptIo = { input: process.stdin, output: process.stdout }; // the plan it restates is on stdout
  if (!interactive(io)) return false;
  const want = String(p.evicts.length);
  return (await ask(`Type the number of spaces this evicts (${want}) to confirm: `, io)) === want;
}

export function registerBroker(program: Command): void {
  const broker = program.command("broker").description("broker-wide maintenance verbs");
  broker
    .command("reconcile")
    .description("print disk and KV lists, their diffs and the derived state; with a direction, converge through the saga")
    .option("--adopt-disk", "the disk records are the truth")
    .option("--adopt-kv", "the broker's KV list is the truth")
    .option("--yes", "confirm the printed blast radius non-interactively")
    .option("--json", "print the report (and the outcome or refusal) as one JSON document")
    .action(async (flags: { adoptDisk?: boolean; adoptKv?: boolean; yes?: boolean; json?: boolean }, cmd: Command) => {
      if (flags.adoptDisk && flags.adoptKv) throw usageError("choose one of --adopt-disk and --adopt-kv", "cotal broker reconcile   # prints both lists first");
      const direction = flags.adoptDisk ? "disk" : flags.adoptKv ? "kv" : undefined;
      const { reconcile } = await import("@cotal/core");
      let report: ReconcileReport | undefined;
      try {
        const r = await reconcile({
          root: rootOf(cmd),
          guards: guardsOf(cmd),
          saga: sagaOf(cmd),
          ...(direction ? { direction } : {}),
          ...(flags.yes ? { yes: true } : {}),
          onReport: (rep) => {
            report = rep;
            if (!flags.json) printReport(rep);
          },
          confirm: typedConfirmation,
          onNotice: (m) => {
            if (!flags.json) err(`cotal: ${m}`);
          },
        });
        if (flags.json) return json({ report: r.report, outcome: r.outcome, saga: r.saga });
        if (r.outcome === "promoted") out("cotal: the reconciled config is promoted; the broker is stopped, so it is not committed yet\n  next: cotal up --detach   # boots it and commits");
        else out(`cotal: reconciled at generation ${r.saga.generation}; the broker preloads ${r.saga.spaces.join(", ")}`);
      } catch (e) {
        if (!flags.json || !report || !isCotalError(e)) throw e;
        const doc = errorDocument(e, { report }, reportContext());
        json(doc);
        process.exitCode = doc.error.exit;
      }
    });
}
