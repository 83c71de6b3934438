import { readFileSync } from "node:fs";
import { hostname } from "node:os";

/** Field 22 of /proc/<pid>/stat: the process start time in clock ticks, which survives nothing but that process. */
/** The fields of /proc/<pid>/stat after comm (field 3 on), or undefined off Linux or for a gone pid. */
function procStatFields(pid: number): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // comm (field 2) may hold spaces and parentheses; everything after the last ")" is space-separated.
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  } catch {
    return undefined;
  }
}

export function processStartTicks(pid: number): string | undefined {
  return procStatFields(pid)?.[19];
}

/**
 * A zombie (state Z) has exited and holds nothing; only its parent's reap removes it, and a detached
 * server's parent is init, which may reap it seconds later: waiting on `kill(0)` alone waited for that.
 */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
  return procStatFields(pid)?.[0] !== "Z";
}

/** The process is stopped (state T: SIGSTOP, or t: a debugger): it holds its sockets and answers nothing. */
export function pidStopped(pid: number): boolean {
  const state = procStatFields(pid)?.[0];
  return state === "T" || state === "t";
}

export interface ProcessOwner {
  pid: number;
  host: string;
  /** /proc start ticks when known: a recycled pid has different ticks, so it does not keep a dead owner alive. */
  procStart?: string;
}

export function selfOwner(): ProcessOwner {
  const procStart = processStartTicks(process.pid);
  return { pid: process.pid, host: hostname(), ...(procStart ? { procStart } : {}) };
}

/** "alive" | "dead" on this host; "unknown" for another host's process, which we cannot judge. */
export function ownerStatus(owner: ProcessOwner): "alive" | "dead" | "unknown" {
  if (owner.host !== hostname()) return "unknown";
  if (!pidAlive(owner.pid)) return "dead";
  if (owner.procStart !== undefined) {
    const now = processStartTicks(owner.pid);
    if (now !== undefined && now !== owner.procStart) return "dead";
  }
  return "alive";
}
