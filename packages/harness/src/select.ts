import type { BrokerBackend } from "./backend.js";
import { ContainerBackend, type ContainerBackendOptions } from "./container-backend.js";
import { dockerAvailable } from "./docker.js";
import { HarnessError } from "./errors.js";
import { ProcessBackend, type ProcessBackendOptions } from "./process-backend.js";

export type BackendChoice = "process" | "container";

export interface SelectBackendOptions {
  process?: ProcessBackendOptions;
  container?: ContainerBackendOptions;
}

/** Reads COTAL_HARNESS_BACKEND; undefined when unset or empty. */
export function forcedBackend(): BackendChoice | undefined {
  const v = process.env.COTAL_HARNESS_BACKEND?.trim();
  if (!v) return undefined;
  if (v === "process" || v === "container") return v;
  throw new HarnessError("invalid-argument", `COTAL_HARNESS_BACKEND must be "process" or "container", not ${JSON.stringify(v)}`);
}

/**
 * COTAL_HARNESS_BACKEND=process|container forces a backend (a forced container without Docker is
 * an error, not a silent fallback); otherwise containers when Docker answers, else processes.
 */
export async function selectBackend(opts: SelectBackendOptions = {}): Promise<BrokerBackend> {
  const forced = forcedBackend();
  if (forced === "process") return new ProcessBackend(opts.process);
  if (forced === "container") {
    if (!(await dockerAvailable())) throw new HarnessError("docker-unavailable", "COTAL_HARNESS_BACKEND=container but no Docker engine answered");
    return new ContainerBackend(opts.container);
  }
  return (await dockerAvailable()) ? new ContainerBackend(opts.container) : new ProcessBackend(opts.process);
}
