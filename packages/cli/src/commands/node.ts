import type { NodeAgentResult } from "@cotal/core";
import type { Command } from "commander";
import { guardsOf, rootOf } from "../context.js";
import { err, json, out } from "../output.js";
import { rerunWith, usageError } from "@cotal/core/errors";

interface NodeRunFlags {
  node: string;
  once?: boolean;
  json?: boolean;
  interval?: number;
}

function intervalOf(v: string): number {
  const n = Number(v);
  if (!/^\d+$/.test(v) || n < 100) throw usageError(`--interval takes milliseconds >= 100, got ${JSON.stringify(v)}`, rerunWith({ "--interval": "2000" }));
  return n;
}

/** One event line: under --json a JSON object stamped by the agent itself (docs/commands/node.md), so a log reader need not trust when it read the line. */
function eventLine(asJson: boolean | undefined): (line: string) => void {
  return asJson ? (line) => err(JSON.stringify({ at: new Date().toISOString(), event: line })) : (line) => err(line);
}

function summary(r: NodeAgentResult): string {
  return `cotal node: ${r.node}: ${r.state}${r.generation !== undefined ? ` generation ${r.generation}` : ""}${r.reason ? `: ${r.reason}` : ""} (applied ${r.applied}, started ${r.started})`;
}

export function registerNode(program: Command): void {
  const node = program.command("node").description("the per-host agent of a cluster root: keeps one node on the committed record (docs/cluster.md)");
  node
    .command("run")
    .description("start the node with every tenant held (none admitted) if it is down, then apply the committed record to it and prove it, whenever it falls behind; SIGTERM stops the agent, not the node")
    .requiredOption("--node <name>", "the node this host runs (a name from `cotal status`)")
    .option("--once", "one round (start, read, apply, prove), then exit: 0 serving, the refusal's exit code otherwise")
    .option("--interval <ms>", "the periodic liveness and record check (a KV watch wakes it sooner)", intervalOf, 2_000)
    .option("--json", "each event as a JSON line on stderr ({at, event}), and the result as JSON (with --once, or when stopped)")
    .action(async (flags: NodeRunFlags, cmd: Command) => {
      const { runNodeAgent } = await import("@cotal/core");
      const ctl = new AbortController();
      const stop = (): void => ctl.abort();
      process.on("SIGINT", stop);
      process.on("SIGTERM", stop);
      try {
        const r = await runNodeAgent({ root: rootOf(cmd), guards: guardsOf(cmd), node: flags.node, ...(flags.once ? { once: true } : {}), ...(flags.interval !== undefined ? { intervalMs: flags.interval } : {}), signal: ctl.signal, onEvent: eventLine(flags.json) });
        if (flags.json) json(r);
        else out(summary(r));
      } finally {
        process.off("SIGINT", stop);
        process.off("SIGTERM", stop);
      }
    });
}
