/**
 * How the authority store reads the JetStream API's answers (docs/saga.md, "The authority store"):
 * a definite refusal carries an err_code, a lost CAS is 10071/10164, and anything else (a timeout, a
 * dropped socket) is a lost reply that only a read-back can settle.
 */
import { JetStreamApiCodes, JetStreamApiError } from "@nats-io/jetstream";
import { CotalError, RERUN } from "../errors.js";

const CAS_LOSS_CODES: ReadonlySet<number> = new Set([JetStreamApiCodes.StreamWrongLastSequence, JetStreamApiCodes.StreamWrongLastSequenceUnknown]);
const UNREACHABLE_NEXT = `cotal status && ${RERUN}   # is the broker running? cotal up --detach starts it`;
/** For refusals only a caller bug can reach: nothing was written, and there is nothing to repair. */
export const BUG_EXIT = "nothing was written; report this message as a cotal bug";

/** The JetStream API err_code of `err` itself, or undefined. Never inferred from message text. */
export function apiErrCode(err: unknown): number | undefined {
  if (err instanceof JetStreamApiError) return err.code;
  // Duck-typed fallback in case two copies of @nats-io/jetstream are ever loaded side by side.
  const apiError = (err as { apiError?: unknown } | null)?.apiError;
  if (typeof apiError === "function") {
    const code = (apiError.call(err) as { err_code?: unknown } | undefined)?.err_code;
    if (typeof code === "number") return code;
  }
  return undefined;
}

/** True when `err` (or anything in its `cause` chain) is a lost CAS: err_code 10071 or 10164. */
export function isCasLoss(err: unknown): boolean {
  let e: unknown = err;
  for (let depth = 0; e !== null && e !== undefined && depth < 16; depth++) {
    const code = apiErrCode(e);
    if (code !== undefined && CAS_LOSS_CODES.has(code)) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

/** 10008, "JetStream system temporarily unavailable" (a stream's group electing, e.g. after a heal): retried, never final. */
const CLUSTER_NOT_AVAILABLE = 10008;

/** True when the server answered that JetStream cannot serve the request yet: a read or an idempotent write may try again. */
export function isTransientApi(err: unknown): boolean {
  return apiErrCode(err) === CLUSTER_NOT_AVAILABLE;
}

export function describe(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

export function unreachable(what: string, cause: unknown): CotalError {
  const code = apiErrCode(cause) ?? apiErrCode((cause as { cause?: unknown } | null)?.cause);
  return new CotalError("inventory-unreachable", `cannot ${what}: ${describe(cause)}`, {
    next: UNREACHABLE_NEXT,
    details: code === undefined ? undefined : { errCode: code },
    cause,
  });
}

export function busy(what: string, cause: unknown): CotalError {
  // 10008 to the end: the group has no leader through this node (an election, or a node cut from its
  // cluster's majority, docs/cluster.md "Partitions"); status names the nodes that answer.
  if (isTransientApi(cause)) {
    return new CotalError("inventory-busy", `cannot ${what} yet: ${describe(cause)} (no leader for it through this node: an election, or a node cut off from the cluster's majority)`, {
      next: `cotal status && ${RERUN}   # status shows which nodes answer; nothing was decided on a missing answer`,
      details: { errCode: CLUSTER_NOT_AVAILABLE },
      cause,
    });
  }
  return new CotalError("inventory-busy", `cannot ${what} yet: ${describe(cause)}`, {
    next: `${RERUN}   # the broker was busy reloading; nothing was decided on a missing answer`,
    cause,
  });
}

export function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
