import type { RotateSysResult, UpResult } from "@cotal/core";
import { resolveRoot } from "@cotal/core/light";
import type { ChildProcess } from "node:child_process";
import type { Command } from "commander";
import { guardsOf, rootOf } from "../context.js";
import { parsePort } from "../duration.js";
import { CotalError, usageError } from "@cotal/core/errors";
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
  nodeHosts?: string;
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
    .option("--node-hosts <a,b,c>", "with --cluster on a new root: each node's host, in order (its listen address; a node on another host is started there by `cotal node run`; default: every node on --host)")
    .option("--json", "print the result as JSON")
    .action(async (flags: UpFlags, cmd: Command) => {
      const { rotateSys, up } = await import("@cotal/core");
      let rotated: RotateSysResult | undefined;
      if (flags.rotateSys) {
        rotated = await rotateSys({ root: rootOf(cmd), guards: guardsOf(cmd) });
        if (!flags.json) {
          out(`cotal: rotated the system account to generation ${rotated.generation} (${rotated.systemAccount}); re-minted $SYS creds for ${rotated.reminted.join(", ") || "no space"}`);
          if (rotated.carried) out(`cotal: carried the cluster's raft state (its streams' assignments) to the new system account on ${rotated.carried.join(", ")}`);
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
        ...(flags.nodeHosts !== undefined ? { nodeHosts: flags.nodeHosts.split(",") } : {}),
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
        await serveForeground(child, result.root);
      }
    });
}

/**
 * Waits on the foreground broker. A signal to `up` (Ctrl-C, `systemctl stop`) or a `cotal down` is the
 * operator's stop: exit 0, so a unit neither fails nor restarts. The broker dying on its own refuses
 * `broker-not-running` (exit 6), and `Restart=on-failure` starts it again (docs/service.md).
 */
async function serveForeground(child: ChildProcess, root: string): Promise<void> {
  const [{ clearRuntime, RootLayout }, { foregroundEnd, readRuntime, takeStopIntent }] = await Promise.all([import("@cotal/core"), import("@cotal/core/broker")]);
  const layout = new RootLayout(root);
  const pid = child.pid ?? 0;
  const recorded = readRuntime(layout)?.owner;
  const owner = recorded?.pid === pid ? recorded : { pid };
  let signalled = false;
  const forward = (sig: NodeJS.Signals): void => {
    signalled = true;
    child.kill(sig);
  };
  process.on("SIGINT", forward);
  process.on("SIGTERM", forward);
  const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve([child.exitCode, child.signalCode]); // it died during the boot
    else child.once("exit", (c, s) => resolve([c, s]));
  });
  const end = foregroundEnd({ signalled, intended: takeStopIntent(layout, owner), code, signal });
  // Only its own record: a broker started since (after a `cotal down`) keeps the one it wrote.
  if (readRuntime(layout)?.owner.pid === pid) clearRuntime(layout);
  if (end.kind === "died") {
    throw new CotalError("broker-not-running", `nats-server (pid ${pid}) exited on its own (${end.how}); no signal or \`cotal down\` stopped it`, {
      next: `tail -n 40 ${shellWord(layout.logFile)}   # why it stopped; then: cotal --root ${shellWord(layout.root)} up`,
    });
  }
}
