import { CotalError } from "@cotal/core/errors";
import { isLogFormat, type LogFormat, type WorkerOverrides } from "@cotal/jobs";

export type WorkerArgs = WorkerOverrides & { root?: string; logFormat?: LogFormat };

/** `--concurrency N`, `--root DIR` and `--log-format json|pretty`; everything else comes from the environment. */
export function workerArgs(argv: readonly string[]): WorkerArgs {
  const out: WorkerArgs = {};
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const value = argv[i + 1];
    if (flag === "--concurrency" && value !== undefined && /^\d+$/.test(value) && Number(value) >= 1) {
      out.concurrency = Number(value);
      i++;
    } else if (flag === "--root" && value !== undefined) {
      out.root = value;
      i++;
    } else if (flag === "--log-format" && isLogFormat(value)) {
      out.logFormat = value;
      i++;
    } else {
      // Bad input, like a bad COTAL_WORKER_* setting: exit 2 with the usage line, never a stack.
      throw new CotalError("invalid-payload", `unknown or malformed argument ${JSON.stringify(flag)}`, { next: "node apps/worker/dist/main.js [--concurrency N] [--root DIR] [--log-format json|pretty]" });
    }
  }
  return out;
}
