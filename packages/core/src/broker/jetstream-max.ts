/**
 * Which server-wide JetStream max a render carries. nats-server cannot reload from a dynamic max to
 * a set one, and before 2.10 cannot change a set one at all, so a running broker keeps the max it
 * booted with; settings.json's budget takes effect at the next cold boot (docs/quotas.md).
 */
import { type Guards } from "../guards.js";
import { closeSync, openSync, readFileSync, readSync } from "node:fs";
import { brokerState } from "./runtime.js";
import type { RootLayout } from "../root/layout.js";
import { loadSettings } from "../root/settings.js";
import { renderedJetStreamMax, type JetStreamMax } from "../render/server-config.js";
import { resolveBudget, type JetStreamBudget } from "./quota-budget.js";

/** The max the running broker booted with ("dynamic" when its config sets none); undefined when none runs. */
export function runningJetStreamMax(layout: RootLayout, guards: Guards): JetStreamMax | "dynamic" | undefined {
  // RENDER_SETTINGS_MAX: the carry-over cell's positive control, live renders take settings.json as is.
  if (guards.RENDER_SETTINGS_MAX || !brokerState(layout).running) return undefined;
  try {
    return jetStreamMaxInFile(layout.serverConf) ?? "dynamic";
  } catch {
    return undefined;
  }
}

/** The max a config file carries (renderedJetStreamMax of its text), reading only its head when that holds both values. */
export function jetStreamMaxInFile(path: string, headBytes = 64 * 1024): JetStreamMax | undefined {
  return renderedJetStreamMax(readHead(path, headBytes));
}

/**
 * The rendered `jetstream {}` block stands before the preloaded JWTs (megabytes at 10,000 tenants),
 * so the head of the file is read first; the whole file only when both values are not in it, which
 * gives exactly the first matches a read of the whole file would.
 */
function readHead(path: string, bytes: number): string {
  const fd = openSync(path, "r");
  try {
    const buf = Buffer.alloc(bytes);
    const n = readSync(fd, buf, 0, bytes, 0);
    if (n < bytes) return buf.subarray(0, n).toString("utf8");
    // Whole lines only: a value cut at the boundary would still match `$` at the end of the text.
    const head = buf.subarray(0, buf.lastIndexOf(0x0a) + 1).toString("utf8");
    if (renderedJetStreamMax(head) !== undefined) return head;
  } finally {
    closeSync(fd);
  }
  return readFileSync(path, "utf8");
}

export interface EffectiveBudget {
  budget: JetStreamBudget;
  /** What the next render carries: undefined renders none (the running broker's dynamic max). */
  render: JetStreamMax | undefined;
  /** Set when settings.json asks for a max the running broker does not have yet. */
  deferred?: { settings: JetStreamMax; running: JetStreamMax | "dynamic" };
}

/**
 * The budget admission checks against (settings.json capped by the running max) and the max the
 * next render carries (the running one while a broker runs, else settings.json's).
 */
export function effectiveBudget(layout: RootLayout, guards: Guards): EffectiveBudget {
  const budget = resolveBudget(loadSettings(layout)?.jetstream, layout.settingsFile);
  const wanted: JetStreamMax = { file: budget.maxFileStore, memory: budget.maxMemoryStore };
  const running = runningJetStreamMax(layout, guards);
  if (running === undefined) return { budget, render: wanted };
  const same = running !== "dynamic" && running.file === wanted.file && running.memory === wanted.memory;
  const capped = running === "dynamic" ? budget : { ...budget, maxFileStore: Math.min(budget.maxFileStore, running.file), maxMemoryStore: Math.min(budget.maxMemoryStore, running.memory) };
  return { budget: capped, render: running === "dynamic" ? undefined : running, ...(same ? {} : { deferred: { settings: wanted, running } }) };
}
