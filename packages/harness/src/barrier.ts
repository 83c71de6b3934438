import { mkdir, open, readdir } from "node:fs/promises";
import { join } from "node:path";
import { monotonicMs, sleep } from "./clock.js";
import { HarnessError } from "./errors.js";

/**
 * A rendezvous between processes through a directory: each party creates one file in it, and
 * waits until `n` entries exist. Every entry counts (no temp files are ever made inside), which is
 * the same rule as saga's failpoint barrier, so harness and CLI parties can meet at one barrier.
 */
export class Barrier {
  constructor(readonly path: string) {}

  /** A barrier in `<dir>/<step>`, the layout COTAL_BARRIER=<dir>:<step>:<n> describes. */
  static forStep(dir: string, step: string): Barrier {
    return new Barrier(join(dir, step));
  }

  /** Registers `name` (must be unique among the parties). */
  async arrive(name: string): Promise<void> {
    if (!name || name.includes("/") || name.startsWith(".")) throw new HarnessError("invalid-argument", `bad barrier party name ${JSON.stringify(name)}`);
    await mkdir(this.path, { recursive: true });
    // O_EXCL: a second arrival under the same name is a test bug, not a second party.
    const fh = await open(join(this.path, name), "wx");
    await fh.writeFile(String(process.pid));
    await fh.close();
  }

  /** How many parties have arrived. */
  async count(): Promise<number> {
    try {
      return (await readdir(this.path)).length;
    } catch {
      return 0;
    }
  }

  async parties(): Promise<string[]> {
    try {
      return (await readdir(this.path)).sort();
    } catch {
      return [];
    }
  }

  /** Resolves once `n` parties have arrived. */
  async waitFor(n: number, timeoutMs = 30_000): Promise<void> {
    const deadline = monotonicMs() + timeoutMs;
    for (;;) {
      const have = await this.count();
      if (have >= n) return;
      if (monotonicMs() > deadline) {
        throw new HarnessError("timeout", `barrier ${this.path}: ${have} of ${n} parties after ${timeoutMs} ms (${(await this.parties()).join(", ")})`);
      }
      await sleep(5);
    }
  }

  /** arrive(name) then waitFor(n). */
  async meet(name: string, n: number, timeoutMs?: number): Promise<void> {
    await this.arrive(name);
    await this.waitFor(n, timeoutMs);
  }
}

export interface BarrierSpec {
  dir: string;
  step: string;
  parties: number;
}

/** `COTAL_BARRIER` value for a step: `<dir>:<step>:<n>`. */
export function barrierEnv(spec: BarrierSpec): Record<string, string> {
  return { COTAL_BARRIER: `${spec.dir}:${spec.step}:${spec.parties}` };
}

/** Parses `<dir>:<step>:<n>`, splitting from the right so a dir may contain colons. */
export function parseBarrierEnv(value: string): BarrierSpec {
  const m = /^(.+):([^:]+):(\d+)$/.exec(value);
  if (!m || !m[1] || !m[2] || !m[3]) throw new HarnessError("invalid-argument", `COTAL_BARRIER must be <dir>:<step>:<n>, not ${JSON.stringify(value)}`);
  return { dir: m[1], step: m[2], parties: Number(m[3]) };
}

/** saga's failpoint form for the same rendezvous: `<step>:barrier:<dir>/<step>:<n>` in COTAL_FAILPOINT. */
export function failpointBarrier(spec: BarrierSpec): string {
  return `${spec.step}:barrier:${join(spec.dir, spec.step)}:${spec.parties}`;
}
