import { usageError } from "@cotal/core/errors";
import { err } from "./output.js";

/**
 * The `--port` parser of a foreground server verb (`cotal dashboard`, `cotal metrics`): 0-65535, 0 for
 * any free port; anything else is a usage refusal whose next is the verb on its default port.
 */
export function portFlag(verb: string, defaultPort: number): (v: string) => number {
  return (v) => {
    const n = Number(v);
    if (!/^\d+$/.test(v) || n > 65_535) throw usageError(`--port takes a port number 0-65535, got ${JSON.stringify(v)}`, `cotal ${verb} --port ${defaultPort}`);
    return n;
  };
}

/**
 * Keeps a foreground server verb up until SIGINT or SIGTERM, then closes it. A failing close is
 * reported on stderr, not thrown: the operator asked it to stop, and it has.
 */
export function serveUntilSignal(verb: string, server: { close(): Promise<void> }): Promise<void> {
  return new Promise<void>((resolve) => {
    const stop = (): void => {
      process.off("SIGINT", stop);
      process.off("SIGTERM", stop);
      server.close().then(resolve, (e: unknown) => {
        err(`cotal ${verb}: closing: ${(e as Error).message}`);
        resolve();
      });
    };
    process.on("SIGINT", stop);
    process.on("SIGTERM", stop);
  });
}
