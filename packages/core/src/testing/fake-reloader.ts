/**
 * A Reloader whose verdicts a test scripts: "reloaded", "failed" with the server's line, or
 * "unproven". It never runs a server; it remembers the digest of server.conf at every reload, so a
 * test can assert which bytes the broker was asked to load.
 */
import type { RootLayout } from "../root/layout.js";
import type { ReloadVerdict } from "../saga/reload.js";
import type { Reloader } from "../saga/reloader.js";
import { digestOfServerConf } from "../saga/digest.js";

export type ScriptedVerdict = "reloaded" | { failed: string } | "unproven";

export class FakeReloader implements Reloader {
  readonly #script: ScriptedVerdict[];
  /** sha256 of server.conf at each reload, in order (undefined: no file). */
  readonly loaded: (string | undefined)[] = [];
  /** Runs after a reload's verdict is decided and before it is returned (an outside writer, a crash…). */
  onReload?: (call: number, verdict: ReloadVerdict) => void | Promise<void>;

  /** `script` is consumed in order; once it runs out every reload is "reloaded". */
  constructor(
    readonly layout: RootLayout,
    script: ScriptedVerdict[] = [],
  ) {
    this.#script = [...script];
  }

  /** Appends verdicts to the script. */
  queue(...verdicts: ScriptedVerdict[]): this {
    this.#script.push(...verdicts);
    return this;
  }

  get calls(): number {
    return this.loaded.length;
  }

  async reload(): Promise<ReloadVerdict> {
    this.loaded.push(digestOfServerConf(this.layout));
    const next = this.#script.shift() ?? "reloaded";
    const verdict: ReloadVerdict =
      next === "reloaded"
        ? { outcome: "reloaded", via: "signal", line: "[INF] Reloaded server configuration", ms: 0 }
        : next === "unproven"
          ? { outcome: "unproven", via: "signal", logTail: "(no reload line in the log)", ms: 0 }
          : { outcome: "failed", via: "signal", line: next.failed, logTail: next.failed, ms: 0 };
    await this.onReload?.(this.loaded.length, verdict);
    return verdict;
  }
}
