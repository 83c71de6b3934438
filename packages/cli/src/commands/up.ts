import { clearRuntime, resolveRoot, RootLayout, rotateSys, up, type RotateSysResult, type UpResult } from "@cotal/saga";
import type { Command } from "commander";
import { guardsOf, rootOf } from "../context.js";
import { parsePort } from "../duration.js";
import { usageError } from "@cotal/saga/errors";
import { existsSync } from "node:fs";
import { err, json, out, shellWord } from "../output.js";
import { compressNames, FEW_NAMES } from "../batch-summary.js";
import { countLogger, feedbackFor } from "../feedback.js";

interface UpFlags {
  port?: string;
  host?: string;
  space?: string;
  singleSpace?: boolean;
  rotateSys?: boolean;
  detach?: boolean;
  cluster?: string;
  tenantReplicas?: string;
  json?: boolean;
}

function parseClusterSize(text: string): number {
  if (!/^\d+$/.test(text)) throw usageError(`invalid cluster size ${JSON.stringify(text)}: expected a node count`, "cotal up --cluster 3 --detach");
  return Number(text);
}

function parseReplicas(text: string): number {
  if (!/^\d+$/.test(text)) throw usageError(`invalid --tenant-replicas ${JSON.stringify(text)}: expected 1 or 3`, "cotal up --cluster 3 --tenant-replicas 3 --detach");
  return Number(text);
}

function printUp(r: UpResult): void {
  const headline = r.alreadyRunning ? (r.notes.length > 0 ? "already running; resolved what it found (see the notes)" : "already running; nothing changed") : r.created ? "created a new root and started the broker" : "broker started";
  out(`cotal: ${headline} (pid ${r.pid}, nats-server ${r.serverVersion})`);
  out(`  root:    ${r.root}`);
  out(`  url:     ${r.url}`);
  out(`  space:   ${r.space}   (${r.spaces.length} space${r.spaces.length === 1 ? "" : "s"}: ${r.spaces.length > FEW_NAMES ? compressNames(r.spaces) : r.spaces.join(", ")})`);
  // Never a path that is not there (a running root with no space left): the way to make one instead.
  if (existsSync(r.credsFile)) {
    out(`  creds:   ${r.credsFile}`);
    out(`  try:     nats --server ${r.url} --creds ${r.credsFile} pub cotal.${r.space}.events.hello hi`);
  } else out(`  creds:   none yet: cotal --root ${shellWord(r.root)} space add ${r.space}`);
  for (const n of r.nodes ?? []) out(`  node:    ${n.name}  pid ${n.pid}  ${n.url}  routes :${n.clusterPort}`);
  for (const n of r.notes) out(`  note:    ${n}`);
  if (!r.multiSpace) out("  note:    single-space root: `cotal space add` needs `cotal up --rotate-sys` first");
  out(`  stop:    cotal down${r.root === resolveRoot(undefined, process.env) ? "" : ` --root ${r.root}`}`);
}

export function registerUp(program: Command): void {
  program
    .command("up")
    .description("create the root on first run, render server.conf from the whole inventory, start nats-server, provision every space")
    .option("--port <port>", "client port, fixed at creation; a stopped broker may move (default: 4222 on a new root, else the root's own)")
    .option("--host <host>", "listen address (default: 127.0.0.1)")
    .option("--space <name>", "first space of a new root (default: default), or the space to print connect details for")
    .option("--single-space", "do not retain the system signing seed (later `space add` needs `up --rotate-sys`)")
    .option("--rotate-sys", "with the broker stopped: mint a successor system account, re-mint every tenant's $SYS creds, retain its signing seed; then start")
    .option("--detach", "start nats-server in the background and return")
    .option("--cluster <n>", "a new root as an N-node cluster on loopback (3-5; routes, JetStream and R3 inventory; needs --detach; docs/cluster.md)")
    .option("--tenant-replicas <n>", "with --cluster on a new root: every space's own streams and buckets R1 or R3; a single broker is always 1 (default: 1)")
    .option("--json", "print the result as JSON")
    .action(async (flags: UpFlags, cmd: Command) => {
      let rotated: RotateSysResult | undefined;
      if (flags.rotateSys) {
        rotated = await rotateSys({ root: rootOf(cmd), guards: guardsOf(cmd) });
        if (!flags.json) {
          out(`cotal: rotated the system account to generation ${rotated.generation} (${rotated.systemAccount}); re-minted $SYS creds for ${rotated.reminted.join(", ") || "no space"}`);
          out(`  warning: ${rotated.warning}`);
        }
      }
      const { bar, log } = await feedbackFor(cmd, { verb: "up", json: flags.json, unit: "count" });
      const logCount = countLogger(log, "provisioned");
      const result = await up({
        root: rootOf(cmd),
        guards: guardsOf(cmd),
        detach: Boolean(flags.detach),
        ...(flags.port !== undefined ? { port: parsePort(flags.port) } : {}),
        ...(flags.host !== undefined ? { host: flags.host } : {}),
        ...(flags.space !== undefined ? { space: flags.space } : {}),
        ...(flags.singleSpace ? { singleSpace: true } : {}),
        ...(flags.cluster !== undefined ? { cluster: parseClusterSize(flags.cluster) } : {}),
        ...(flags.tenantReplicas !== undefined ? { tenantReplicas: parseReplicas(flags.tenantReplicas) } : {}),
        onProgress: (m) => {
          if (log) log.info({ event: "progress" }, m);
          else if (!flags.json && process.stderr.isTTY) err(`… ${m}`);
        },
        onProvision: (p) => {
          if (p.done === 1) bar.phase("provision", p.total);
          bar.update(p.done, p.total, p.space);
          logCount(p);
        },
      }).finally(() => bar.stop());
      const { child, ...printable } = result;
      if (flags.json) json(rotated ? { ...printable, rotated } : printable);
      else printUp(result);
      if (child) {
        out("  running in the foreground; Ctrl-C stops it");
        const forward = (sig: NodeJS.Signals) => child.kill(sig);
        process.on("SIGINT", forward);
        process.on("SIGTERM", forward);
        const code = await new Promise<number | null>((resolve) => child.once("exit", (c) => resolve(c)));
        clearRuntime(new RootLayout(result.root));
        process.exitCode = code === 0 || code === null ? 0 : 6;
      }
    });
}
