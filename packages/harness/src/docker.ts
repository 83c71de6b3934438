import { getContainerRuntimeClient } from "testcontainers";

export interface DockerProbe {
  available: boolean;
  /** Why not, when unavailable: the discovery error or the timeout. */
  reason?: string;
}

let probe: Promise<DockerProbe> | undefined;

/**
 * Asks testcontainers' own discovery (DOCKER_HOST, ~/.testcontainers.properties, the usual
 * sockets) for a container runtime. Never throws. Cached for the process unless `fresh`, since a
 * probe costs a round trip or a timeout.
 */
export function probeDocker(opts: { timeoutMs?: number; fresh?: boolean } = {}): Promise<DockerProbe> {
  if (probe && !opts.fresh) return probe;
  const timeoutMs = opts.timeoutMs ?? 3_000;
  probe = new Promise<DockerProbe>((resolve) => {
    const timer = setTimeout(() => resolve({ available: false, reason: `no answer within ${timeoutMs} ms` }), timeoutMs);
    timer.unref();
    let discovery: Promise<unknown>;
    try {
      discovery = getContainerRuntimeClient();
    } catch (err) {
      discovery = Promise.reject(err);
    }
    discovery.then(
      () => {
        clearTimeout(timer);
        resolve({ available: true });
      },
      (err: unknown) => {
        clearTimeout(timer);
        resolve({ available: false, reason: err instanceof Error ? err.message : String(err) });
      },
    );
  });
  return probe;
}

/** Whether a Docker engine answers (see `probeDocker`). */
export async function dockerAvailable(opts: { timeoutMs?: number; fresh?: boolean } = {}): Promise<boolean> {
  return (await probeDocker(opts)).available;
}
