import { isLogFormat, type LogFormat, type WorkerOverrides } from "@cotal/jobs";
import { SagaError } from "@cotal/saga";

export type WorkerArgs = WorkerOverrides & { root?: string; logFormat?: LogFormat };

const USAGE = "usage: main.js [--concurrency N] [--root DIR] [--log-format json|pretty]";

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
    } else throw new SagaError("invalid-argument", `unknown or malformed argument ${JSON.stringify(flag)}`, { exit: USAGE });
  }
  return out;
}
