import { ERROR_TABLE, JOBS_ERROR_CODES, SAGA_ERROR_CODES, CotalError, type ErrorCode } from "@cotal/core/errors";
import { UnrecoverableError } from "bullmq";
import { describe, expect, it } from "vitest";
import { isRetriable, toJobFailure } from "../src/failures.js";

// The jobs decide retries from the core's table, not a list of their own.
describe("job failures", () => {
  const thrown: [ErrorCode, Error][] = [
    ...SAGA_ERROR_CODES.map((c): [ErrorCode, Error] => [c, new CotalError(c, "x")]),
    ...JOBS_ERROR_CODES.map((c): [ErrorCode, Error] => [c, new CotalError(c, "x")]),
  ];
  it.each(thrown)("%s retries exactly when the table says so", (code, err) => {
    expect(isRetriable(err)).toBe(ERROR_TABLE[code].retriable);
    expect(toJobFailure(err) instanceof UnrecoverableError).toBe(!ERROR_TABLE[code].retriable);
  });

  it("words the failure as [code] message (next: …), the table's default when the error has none", () => {
    expect(toJobFailure(new CotalError("lock-held", "locked", { next: "wait" })).message).toBe("[lock-held] locked (next: wait)");
    expect(toJobFailure(new CotalError("conflict", "moved")).message).toBe("[conflict] moved (next: cotal jobs status)");
    expect(toJobFailure(new CotalError("invalid-seed", "bad seed")).message).toBe("[invalid-seed] bad seed");
  });

  it("retries an untyped error (attempts bound it) and a full disk, not a foreign operator", () => {
    expect(isRetriable(new Error("socket hang up"))).toBe(true);
    expect(isRetriable(Object.assign(new Error("no space"), { code: "ENOSPC", syscall: "write", path: "/r/x" }))).toBe(true);
    expect(isRetriable(new CotalError("foreign-operator", "not ours"))).toBe(false);
  });
});
