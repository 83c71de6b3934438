import { readdirSync, readFileSync } from "node:fs";
import { basename } from "node:path";

export type ServerKind = "broker" | "maintenance" | "isolated" | "other";

export interface ServerProc {
  pid: number;
  kind: ServerKind;
  config: string;
}

/**
 * Every nats-server whose command line names a path under `root`, read from /proc (black box: no
 * cotal record is trusted). The broker runs `-c <root>/server.conf`, a maintenance broker
 * `-c <root>/run/maintenance.conf`, an isolated backup/restore broker a config under
 * `<root>/maintenance/attempt-*`.
 */
export function serversOf(root: string): ServerProc[] {
  const out: ServerProc[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    let argv: string[];
    try {
      argv = readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0").filter(Boolean);
    } catch {
      continue; // exited while we looked
    }
    if (argv.length === 0 || basename(argv[0] ?? "") !== "nats-server") continue;
    if (isZombie(Number(entry))) continue;
    const ci = argv.indexOf("-c");
    const config = ci >= 0 ? (argv[ci + 1] ?? "") : argv.join(" ");
    if (!config.startsWith(`${root}/`)) continue;
    const kind: ServerKind =
      config === `${root}/server.conf` ? "broker" : config === `${root}/run/maintenance.conf` ? "maintenance" : config.startsWith(`${root}/maintenance/attempt-`) ? "isolated" : "other";
    out.push({ pid: Number(entry), kind, config });
  }
  return out;
}

function isZombie(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z");
  } catch {
    return true;
  }
}

export function sigkill(pid: number): boolean {
  try {
    process.kill(pid, "SIGKILL");
    return true;
  } catch {
    return false;
  }
}

/** Waits until `pid` is gone (SIGKILL is asynchronous), at most `ms`. */
export async function waitGone(pid: number, ms = 5_000): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    try {
      process.kill(pid, 0);
      if (isZombie(pid)) return true;
    } catch {
      return true;
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  return false;
}
