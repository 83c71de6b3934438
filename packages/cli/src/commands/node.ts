import type { NodeAddResult, NodeAgentResult } from "@cotal/core";
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

/** A port flag of `node add`: a bad one names the same command without it (a free port is picked). */
function portOf(flag: "--port" | "--cluster-port", v: string): number {
  const n = Number(v);
  if (!/^\d+$/.test(v) || n < 1 || n > 65535) throw usageError(`${flag} takes a port 1-65535, got ${JSON.stringify(v)}`, rerunWith({ [flag]: null }));
  return n;
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

interface NodeAddFlags {
  host?: string;
  port?: string;
  clusterPort?: string;
  certFile?: string;
  keyFile?: string;
  json?: boolean;
}

function addSummary(r: NodeAddResult): string[] {
  const n = r.node;
  return [
    `cotal node: added ${n.name} at ${n.url} (routes on ${n.host}:${n.clusterPort})${r.started ? ": started here, the committed record proven on every node" : ""}`,
    ...(r.started ? [] : [`cotal node: its host needs: ${r.files.join(" ")}`]),
    ...(r.notes ?? []).map((n) => `note: ${n}`),
    ...r.next.map((l) => `next: ${l}`),
  ];
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
  node
    .command("add")
    .description("join a new node to this cluster root: its place in settings.json, its route certificate and its agent's users; a node on this host is started held and proven with the others before this returns")
    .option("--host <address>", "the node's host: where it listens and the others dial it (default: the root's host)")
    .option("--port <port>", "its client port (default: a free one here; on another host, node 1's)")
    .option("--cluster-port <port>", "its route port (default: a free one here; on another host, node 1's)")
    .option("--cert-file <path>", "with the operator's route certificates (routeTls source files): the node's certificate")
    .option("--key-file <path>", "with the operator's route certificates: the node's key")
    .option("--json", "the result as JSON")
    .action(async (flags: NodeAddFlags, cmd: Command) => {
      const { nodeAdd } = await import("@cotal/core");
      const r = await nodeAdd({
        root: rootOf(cmd),
        guards: guardsOf(cmd),
        ...(flags.host !== undefined ? { host: flags.host } : {}),
        ...(flags.port !== undefined ? { port: portOf("--port", flags.port) } : {}),
        ...(flags.clusterPort !== undefined ? { clusterPort: portOf("--cluster-port", flags.clusterPort) } : {}),
        ...(flags.certFile !== undefined ? { certFile: flags.certFile } : {}),
        ...(flags.keyFile !== undefined ? { keyFile: flags.keyFile } : {}),
        ...(flags.json ? {} : { onProgress: (m: string) => err(`cotal: ${m}`) }),
      });
      if (flags.json) json({ ...r, up: r.up ? { ...r.up, child: undefined } : undefined });
      else for (const line of addSummary(r)) out(line);
    });
  node
    .command("bundle")
    .description("write the directory a node's host keeps instead of the root (settings.json, its route files, its agent's users; no seed of the root), to copy to that host and run `cotal --root DIR node run` there")
    .requiredOption("--node <name>", "the node whose host the directory is for (a name from `cotal status`)")
    .requiredOption("--out <dir>", "where to write it: a new (or empty) directory outside the root, at the path the node's host will use")
    .option("--json", "the result as JSON")
    .action(async (flags: { node: string; out: string; json?: boolean }, cmd: Command) => {
      const { bundleNode } = await import("@cotal/core");
      const r = bundleNode({ root: rootOf(cmd), guards: guardsOf(cmd), node: flags.node, out: flags.out });
      if (flags.json) json(r);
      else for (const line of [`cotal node: wrote ${r.dir} for ${r.node} (host ${r.host}): ${r.files.join(" ")}`, ...r.next.map((l) => `next: ${l}`)]) out(line);
    });
  node
    .command("forget")
    .description("remove a node that is gone for good: JetStream forgets its peer, settings.json drops it, and the nodes that remain are proven without its routes; refused while it answers")
    .argument("<node>", "the node's name, as `cotal status` lists it")
    .option("--json", "the result as JSON")
    .action(async (name: string, flags: { json?: boolean }, cmd: Command) => {
      const { nodeForget } = await import("@cotal/core");
      const r = await nodeForget({ root: rootOf(cmd), guards: guardsOf(cmd), node: name, ...(flags.json ? {} : { onProgress: (m: string) => err(`cotal: ${m}`) }) });
      if (flags.json) json({ ...r, up: { ...r.up, child: undefined } });
      else out(`cotal node: forgot ${r.node} (JetStream peer ${r.peer}); ${r.up.nodes?.length ?? 0} nodes remain, each proven on the committed record${r.routesPinned ? ", and their routes refuse its certificate" : ""}`);
    });
}
