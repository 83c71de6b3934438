import type { Command } from "commander";
import type { Logger, LogFormat } from "@cotal/jobs/log";
import { progressBar, progressWanted, type Progress } from "./progress.js";
import { guardsOf } from "./context.js";

/** The program-wide `--log-format` (commander already refused any other value). */
export function logFormatOf(cmd: Command): LogFormat | undefined {
  return cmd.optsWithGlobals<{ logFormat?: LogFormat }>().logFormat;
}

/** The CLI's log level (COTAL_LOG_LEVEL; pino's info by default). */
export function logLevel(): { level?: string } {
  const level = process.env.COTAL_LOG_LEVEL;
  return level === undefined ? {} : { level };
}

/** What a long verb reports while it works: a bar for a person, log lines when asked, else nothing. */
export interface Feedback {
  bar: Progress;
  log: Logger | undefined;
}

export async function feedbackFor(cmd: Command, o: { verb: string; json: boolean | undefined; unit: "count" | "bytes" }): Promise<Feedback> {
  const format = logFormatOf(cmd);
  const bar = progressBar({ enabled: progressWanted({ isTTY: process.stderr.isTTY, json: o.json === true, logFormat: format }), unit: o.unit });
  if (!format) return { bar, log: undefined };
  const { createLogger } = await import("@cotal/jobs/log"); // lazy: pino loads only when logs are asked for
  return { bar, log: createLogger({ format, name: `cotal ${o.verb}`, guards: guardsOf(cmd), ...logLevel() }) };
}

/** Log lines for counted progress: the first item, each tenth, and the last, never one per item. */
export function countLogger(log: Logger | undefined, what: string): (p: { done: number; total: number }) => void {
  let step = -1;
  return ({ done, total }) => {
    const now = total === 0 ? 10 : Math.floor((done / total) * 10);
    if (!log || now === step) return;
    step = now;
    log.info({ event: "progress", what, done, total }, `${what}: ${done}/${total}`);
  };
}
