import { pino, type DestinationStream, type Logger } from "pino";
import pretty from "pino-pretty";
import { redactSeeds } from "@cotal/core";
import { GUARDS_ON, type Guards } from "@cotal/core/light";

export const LOG_FORMATS = ["json", "pretty"] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];
export type { Logger } from "pino";

export function isLogFormat(value: unknown): value is LogFormat {
  return typeof value === "string" && (LOG_FORMATS as readonly string[]).includes(value);
}

/** Without --log-format: readable lines for a person at a terminal, JSON lines for a supervisor. */
export function defaultLogFormat(isTTY: boolean | undefined): LogFormat {
  return isTTY ? "pretty" : "json";
}

export interface LoggerOptions {
  format: LogFormat;
  /** Who logs: `cotal-worker`, `cotal worker`, `cotal up`… (the pino `name` field). */
  name: string;
  /** Where lines go (default: stderr, written synchronously so a drain's last line is never lost). */
  destination?: { write(line: string): unknown };
  /** pino's level (default info; the entries pass COTAL_LOG_LEVEL). */
  level?: string;
  /** The guards the entry handed in (default: every guard on); LOG_SEEDS turns the scrubber off. */
  guards?: Guards;
}

/**
 * A pino logger whose every serialised line passes the seed scrubber before it is written, so no
 * field, message or error stack can carry a seed (the guard LOG_SEEDS turns that off).
 */
export function createLogger(opts: LoggerOptions): Logger {
  const sink = opts.destination ?? pino.destination({ fd: 2, sync: true });
  // pino-pretty's formatter turns each JSON line into its readable form in this thread (no transport worker).
  const render = opts.format === "pretty" ? pretty.prettyFactory({ colorize: opts.destination ? false : process.stderr.isTTY === true, ignore: "pid,hostname" }) : (line: string) => line;
  const raw = (opts.guards ?? GUARDS_ON).LOG_SEEDS;
  const scrubbed: DestinationStream = { write: (line: string) => void sink.write(render(raw ? line : redactSeeds(line))) };
  return pino({ name: opts.name, level: opts.level ?? "info" }, scrubbed);
}

/** A line-printing callback (what older hooks take) that logs each line at info. */
export function lineLogger(logger: Logger): (line: string) => void {
  return (line) => logger.info(line);
}
