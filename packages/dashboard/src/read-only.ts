import { GUARDS_ON, type Guards } from "@cotal/core/light";
import type { NextFunction, Request, Response } from "express";

/** The only methods the dashboard answers: it reads the root and the queues, it never acts on them. */
export const READ_METHODS = ["GET", "HEAD"] as const;
export const ALLOW_HEADER = READ_METHODS.join(", ");

/** The refusal's body: names this guard, so a test can tell it from Bull Board's own read-only 405. */
export const READ_ONLY_REFUSAL = "cotal dashboard is read-only: it answers GET and HEAD only (use the cotal CLI to act on jobs)\n";

/** Pure: whether a request method is one the dashboard answers (the DASHBOARD_WRITES switch lets every method through). */
export function methodAllowed(method: string, writes = false): boolean {
  return writes || (READ_METHODS as readonly string[]).includes(method.toUpperCase());
}

/**
 * Mounted before every router, Bull Board's included: with no login and no Origin a browser must
 * send, refusing every write by method is what keeps any local process from acting on the queues.
 */
export function readOnlyGuard(guards: Guards = GUARDS_ON): (req: Request, res: Response, next: NextFunction) => void {
  return (req, res, next) => {
    if (methodAllowed(req.method, guards.DASHBOARD_WRITES)) return next();
    res.status(405).set("allow", ALLOW_HEADER).type("text/plain").send(READ_ONLY_REFUSAL);
  };
}
