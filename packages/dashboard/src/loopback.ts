import { isIP } from "node:net";
import { GUARDS_ON, type Guards } from "@cotal/core/light";

/** Hosts that only this machine can reach: 127.0.0.0/8, ::1 and the name localhost. */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[(.*)\]$/, "$1").toLowerCase();
  if (h === "localhost") return true;
  if (isIP(h) === 4) return h.startsWith("127.");
  if (isIP(h) === 6) return h === "::1" || h === "0:0:0:0:0:0:0:1";
  return false;
}

/**
 * Whether a request's Host header names this server. A page on another site that rebinds its own
 * DNS name to 127.0.0.1 sends that name as Host; answering only our own names stops it reading
 * tenants through the operator's browser.
 */
export function hostHeaderAllowed(header: string | undefined, allowed: ReadonlySet<string>, guards: Guards = GUARDS_ON): boolean {
  if (guards.DASHBOARD_ANY_HOST_HEADER) return true;
  if (!header) return false;
  const name = header.toLowerCase().replace(/:\d+$/, "");
  return allowed.has(name);
}
