import type { StatusReport } from "@cotal/core";
import type { Command } from "commander";
import { guardsOf, rootOf } from "../context.js";
import { json, out } from "../output.js";

async function printStatus(s: StatusReport): Promise<void> {
  if (!s.exists) (await import("@cotal/core/root")).requireRoot(s.root); // gone since the check before the verb: the same refusal
  out(`root:    ${s.root}`);
  out(`state:   ${s.state} — ${s.why}`);
  const b = s.broker;
  out(b.running ? `broker:  running, pid ${b.pid}, ${b.url}, nats-server ${b.serverVersion}, since ${b.startedAt}${b.through ? `, through ${b.through}` : ""}` : `broker:  stopped${b.staleRuntime ? " (a stale runtime record was left by a crash)" : ""}`);
  for (const n of b.nodes ?? []) {
    const proof = n.appliedGeneration === null ? "no proof recorded" : `proven generation ${n.appliedGeneration}`;
    out(`  node:  ${n.name}  ${n.running ? `running${n.pid === null ? "" : `, pid ${n.pid}`}${n.elsewhere ? ` on ${n.elsewhere}` : ""}` : "not running"}  ${n.url}  ${proof}${n.behind ? " (behind)" : ""}${n.stillAdmits.length > 0 ? `  still admits ${n.stillAdmits.join(", ")}` : ""}${n.state === "still admits" || n.state === "behind" ? "" : `  [${n.state}${n.state === "clean" || n.state === "stopped" || n.state === "UNREACHABLE" ? "" : `: ${n.why}`}]`}`);
    if (n.reach) out(`    reached: ${reachLine(n.reachable === true, n.reach)}`); // as the control host sees it (docs/cluster.md "Verbs through any node")
    if (n.next) out(`    next: ${n.next}`); // a node's own way out (STREAMS UNSERVED), the root named
    const a = n.agent;
    if (a) out(`    agent: ${a.running === null ? `pid ${a.pid} on ${a.host ?? "another host"}` : a.running ? `pid ${a.pid}` : `pid ${a.pid} gone`}: ${a.state}${a.generation !== undefined ? ` generation ${a.generation}` : ""}${a.reason ? `: ${a.reason}` : ""} (${a.at})${a.next ? `\n      next: ${a.next}` : ""}`);
  }
  if (s.operator) out(`trust:   operator ${s.operator}${s.multiSpace ? "" : " (single-space root)"}`);
  const inv = s.inventory;
  if (inv) {
    out(`kv:      generation ${inv.generation}, applied ${inv.appliedGeneration}, ${inv.spaces.length} space(s), revision ${inv.revision}`);
    if (inv.pending) out(`pending: ${inv.pending.op} +[${inv.pending.adds.join(", ")}] -[${inv.pending.removes.join(", ")}] → generation ${inv.pending.generation} by ${inv.pending.writer}${inv.pending.stagedDigest ? " (staged)" : ""}`);
  } else if (s.inventoryError) out(`kv:      ${s.inventoryError}`);
  out(`spaces:  ${s.spaces.length} on disk`);
  for (const sp of s.spaces) out(`  ${sp.name.padEnd(24)} ${sp.publicKey}${sp.inConfig ? "" : "  NOT IN server.conf"}${sp.inInventory === false ? "  NOT IN the KV inventory" : ""}`);
  for (const n of s.kvOnly) out(`  ${n.padEnd(24)} listed in the KV inventory, no record on disk`);
  const j = s.journal;
  if (j?.op === "space-rm") out(`journal: space-rm ${j.space} since ${j.startedAt}${j.streamsDeleted ? " (streams deleted)" : ""}`);
  else if (j?.op === "cut") {
    const attempt = j.attempt ? "; a backup/restore attempt holds it" : "";
    out(`journal: preserve-state cut ${j.cutId}, ${j.state} since ${j.readyAt ?? j.startedAt}${attempt}${j.lastResumeError ? `; last resume failed: ${j.lastResumeError}` : ""}`);
  }
  for (const q of s.quiesced ?? []) {
    const who = q.owner ? `online backup/restore ${q.attemptId} (${q.stage}, pid ${q.owner.pid} ${q.owner.status})` : "no backup journaled";
    out(`quiesced: space ${q.space} — its clients are refused (${who}${q.revokeAllBefore ? `; users issued at or before ${new Date(q.revokeAllBefore * 1000).toISOString()} revoked` : ""})`);
    out(`  next: ${q.next}`);
  }
  if (s.restoreUnfinished) {
    out(`restore: space ${s.restoreUnfinished.space} is lifted but its restore from ${s.restoreUnfinished.from} is unfinished (its --replace deleted the old streams)`);
    out(`  next: ${s.restoreUnfinished.next}`);
  }
  for (const k of s.keyRotations ?? []) {
    out(`key rotation: space ${k.space} ${k.stage === "keeping-old" ? `keeps its old signing key ${k.oldKey} until ${k.keepOldUntil ?? "--finish"} (the new one, ${k.newKey}, signs)` : `was interrupted (${k.stage}; started ${k.startedAt})`}`);
    out(`  next: ${k.next}`);
  }
  for (const c of s.corrupt) out(`  CORRUPT ${c.path}: ${c.reason}`);
  for (const k of s.configOnly) out(`  server.conf preloads ${k}, which no record on disk vouches for`);
  if (s.lock === "corrupt") out("lock:    unreadable lock file");
  else if (s.lock) out(`lock:    held by pid ${s.lock.pid} on ${s.lock.host} (${s.lock.purpose}, ${s.lock.status})`);
  const owed = s.provisioningOwed ?? [];
  if (owed.length > 0) out(`provisioning: may be incomplete for ${owed.length > 5 ? `${owed.slice(0, 5).join(", ")} and ${owed.length - 5} more` : owed.join(", ")} (a verb stopped after trusting them)`);
  if (s.next) out(`next:    ${s.next}`); // the headline state's way out, the root named (ops/status.ts)
}

function reachLine(reachable: boolean, r: { jetstream: boolean | null; ms: number; why?: string }): string {
  if (!reachable) return `no (${r.why ?? "no answer"})`;
  return r.jetstream ? `yes, in ${r.ms} ms` : `yes, in ${r.ms} ms, but ${r.why ?? "its JetStream cannot read the record"}`;
}

export function registerStatus(program: Command): void {
  program
    .command("status")
    .description("broker process, tenants on disk vs in the running config, lock holder, derived state")
    .option("--json", "print the report as JSON")
    .action(async (flags: { json?: boolean }, cmd: Command) => {
      const { status } = await import("@cotal/core");
      const s = await status({ root: rootOf(cmd), guards: guardsOf(cmd) });
      if (flags.json) json(s);
      else await printStatus(s);
    });
}
