import { hostname } from "node:os";
import type { LeaseHolder } from "../inventory/authority-store.js";
import { pidAlive } from "../lock/process-identity.js";

/** This process, as a lease holder an operator can recognise. */
export function selfHolder(verb: string): LeaseHolder {
  return { pid: process.pid, host: hostname(), verb };
}

/**
 * A holder on this host whose pid is gone crashed: waiting out its TTL helps nobody. A live pid
 * (even a recycled one) is never judged dead, which errs toward waiting.
 */
export function holderIsDead(holder: LeaseHolder): boolean {
  return holder.host === hostname() && !pidAlive(holder.pid);
}
