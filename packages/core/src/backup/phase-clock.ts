/**
 * Where an online backup's or restore's time goes (BENCHMARKS.md, "the fixed part"): consecutive
 * laps of the verb's own phases, and each saga step of the quiesce and the lift under its phase.
 * Pure bookkeeping: the verb calls `lap` as it leaves a phase; nothing here changes what it does.
 */
import type { SagaTiming } from "../saga/steps.js";

export interface PhaseTiming {
  /** The verb's phase ("quiesce saga"), or a saga step inside one ("quiesce saga: reload-proof"). */
  phase: string;
  ms: number;
}

export class PhaseClock {
  readonly laps: PhaseTiming[] = [];
  private last: number;
  /** The phase whose saga steps `step` records. */
  private current = "";

  constructor(startedAt: number = performance.now()) {
    this.last = startedAt;
  }

  /** Names the phase the next saga steps belong to. */
  enter(phase: string): void {
    this.current = phase;
  }

  /** Ends the phase `phase` now: its time is everything since the previous lap. */
  lap(phase: string): void {
    const now = performance.now();
    this.laps.push({ phase, ms: now - this.last });
    this.last = now;
  }

  /** A saga step's time (SagaEnv.onTiming), recorded under the entered phase. */
  readonly step = (step: SagaTiming, ms: number): void => {
    this.laps.push({ phase: `${this.current || "saga"}: ${step}`, ms });
  };
}
