import { clearLine, cursorTo } from "node:readline";
import { SingleBar } from "cli-progress";

/** A bar is for a person watching: stderr a TTY, output not --json, no log lines chosen instead. */
export function progressWanted(o: { isTTY: boolean | undefined; json: boolean; logFormat?: string | undefined }): boolean {
  return o.isTTY === true && !o.json && o.logFormat === undefined;
}

export interface Progress {
  /** Whether anything is drawn at all (a caller skips work only a bar needs). */
  readonly live: boolean;
  /** One line saying what runs now ("space add: 300 spaces: claiming…"), rewritten in place until a bar takes the line. */
  status(text: string): void;
  /** (Re)starts the bar for a phase: `label` names it, `total` is its size in the bar's unit. */
  phase(label: string, total: number): void;
  update(done: number, total?: number, detail?: string): void;
  stop(): void;
}

const QUIET: Progress = { live: false, status: () => undefined, phase: () => undefined, update: () => undefined, stop: () => undefined };

export interface ProgressOptions {
  enabled: boolean;
  /** "count" draws done/total; "bytes" draws MB. */
  unit: "count" | "bytes";
  /** Default stderr; a test passes a stream claiming to be a TTY. */
  stream?: NodeJS.WritableStream;
}

const mb = (n: number): string => (n / 1_048_576).toFixed(1);

/** One cli-progress bar on stderr, or nothing at all when it is not wanted (see progressWanted). */
export function progressBar(opts: ProgressOptions): Progress {
  if (!opts.enabled) return QUIET;
  const stream = opts.stream ?? process.stderr;
  const bar = new SingleBar({
    stream,
    format: `{label} [{bar}] {percentage}% {value}/{total}${opts.unit === "bytes" ? " MB" : ""} {detail}`,
    formatValue: (v, _o, type) => (opts.unit === "bytes" && (type === "value" || type === "total") ? mb(v) : String(v)),
    barsize: 30,
    hideCursor: false,
    clearOnComplete: false,
    stopOnComplete: false,
    fps: 12,
  });
  let started = false;
  let label = "";
  /** A status line stands on the terminal's last line (cleared before a bar or the verb's output). */
  let line = false;
  const clear = (): void => {
    if (!line) return;
    clearLine(stream, 0);
    cursorTo(stream, 0);
    line = false;
  };
  return {
    live: true,
    status(text) {
      if (started) bar.stop(); // the bar keeps its last state on its line; the status takes the next
      started = false;
      clear();
      const width = (stream as { columns?: number }).columns || 80; // a pty without a size says 0
      stream.write(text.length < width ? text : `${text.slice(0, Math.max(width - 2, 1))}…`);
      line = true;
    },
    phase(next, total) {
      if (started && next === label) return bar.setTotal(total);
      if (started) bar.stop();
      clear();
      label = next;
      bar.start(Math.max(total, 0), 0, { label: next.padEnd(12), detail: "" });
      started = true;
    },
    update(done, total, detail) {
      if (!started) return;
      if (total !== undefined) bar.setTotal(total);
      bar.update(done, { detail: detail ?? "" });
    },
    stop() {
      if (started) bar.stop();
      started = false;
      clear();
    },
  };
}
