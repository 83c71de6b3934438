import { status, type StatusReport } from "@cotal/saga";
import type { Command } from "commander";
import { rootOf } from "../context.js";
import { json, out } from "../output.js";

function printStatus(s: StatusReport): void {
  if (!s.exists) {
    out(`cotal: no root at ${s.root}`);
    out("  next: cotal up --detach");
    return;
  }
  out(`root:    ${s.root}`);
  out(`state:   ${s.state}`);
  const b = s.broker;
  out(b.running ? `broker:  running, pid ${b.pid}, ${b.url}, nats-server ${b.serverVersion}, since ${b.startedAt}` : `broker:  stopped${b.staleRuntime ? " (a stale runtime record was left by a crash)" : ""}`);
  if (s.operator) out(`trust:   operator ${s.operator}${s.multiSpace ? "" : " (single-space root)"}`);
  out(`spaces:  ${s.spaces.length}`);
  for (const sp of s.spaces) out(`  ${sp.name.padEnd(24)} ${sp.publicKey}${sp.inConfig ? "" : "  NOT IN server.conf"}`);
  for (const c of s.corrupt) out(`  CORRUPT ${c.path}: ${c.reason}`);
  for (const k of s.configOnly) out(`  server.conf preloads ${k}, which no record on disk vouches for`);
  if (s.lock === "corrupt") out("lock:    unreadable lock file");
  else if (s.lock) out(`lock:    held by pid ${s.lock.pid} on ${s.lock.host} (${s.lock.purpose}, ${s.lock.status})`);
  if (s.state === "uncertain") out("  next: repair or move aside the corrupt records above");
  else if (s.state === "stopped") out("  next: cotal up --detach");
}

export function registerStatus(program: Command): void {
  program
    .command("status")
    .description("broker process, tenants on disk vs in the running config, lock holder, derived state")
    .option("--json", "print the report as JSON")
    .action((flags: { json?: boolean }, cmd: Command) => {
      const s = status({ root: rootOf(cmd) });
      if (flags.json) json(s);
      else printStatus(s);
    });
}
