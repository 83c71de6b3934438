import type { Command } from "commander";
import type { SagaPhase } from "@cotal/core";
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

/** What the phase line says while a step runs (keys: the saga's own step names, steps.ts; typed so a new step needs its words). */
const PHASE_WORDS: Record<SagaPhase["step"], string> = {
  connect: "connecting to the broker",
  lock: "taking the root's lock",
  journal: "checking the journal",
  inventory: "reading the records",
  read: "reading the inventory",
  lease: "taking the writer lease",
  decide: "deciding",
  claim: "claiming",
  materialise: "minting accounts",
  "render-stage": "rendering the config",
  promote: "promoting the config",
  "reload-proof": "reloading and proving",
  reconnect: "reconnecting",
  commit: "committing",
  release: "releasing the lease",
};

/** What a phase line is about: `space add: 300 spaces`, or the one space a verb names (`space rm alpha`). */
export interface PhaseSubject {
  verb: string;
  spaces: number;
  space?: string;
}

/** The phase line's words before the step's: one home for the line's shape. */
export function phaseSubject(o: PhaseSubject): string {
  return o.space !== undefined ? `${o.verb} ${o.space}` : `${o.verb}: ${o.spaces} space${o.spaces === 1 ? "" : "s"}`;
}

/**
 * A verb's saga phases as feedback (docs/operating.md, "Progress"): on a TTY a status line as each
 * step starts; with --log-format one line as each ends (its time, the generation once claimed).
 */
export function phaseFeedback(fb: Feedback, o: PhaseSubject & { startedAt?: number }): (e: SagaPhase) => void {
  const t0 = o.startedAt ?? performance.now();
  const what = phaseSubject(o);
  return (e) => {
    if (e.state === "start") return fb.bar.status(`${what}: ${PHASE_WORDS[e.step]}…`);
    const fields = { event: "phase", verb: o.verb, phase: e.step, ...(o.space === undefined ? {} : { space: o.space }), spaces: o.spaces, ms: Math.round(e.ms), elapsedMs: Math.round(performance.now() - t0), ...(e.generation === undefined ? {} : { generation: e.generation }) };
    fb.log?.info(fields, `${what}: ${e.step} (${fields.ms} ms)`);
  };
}
