/**
 * Which server-wide JetStream max a render carries. nats-server cannot reload from a dynamic max to
 * a set one, and before 2.10 cannot change a set one at all, so a running broker keeps the max it
 * booted with; settings.json's budget takes effect at the next cold boot (docs/quotas.md).
 */
import { unsafe } from "../unsafe.js";
import { readFileSync } from "node:fs";
import { brokerState } from "../broker/runtime.js";
import type { RootLayout } from "../root/layout.js";
import { loadSettings } from "../root/settings.js";
import { renderedJetStreamMax, type JetStreamMax } from "../render/server-config.js";
import { resolveBudget, type JetStreamBudget } from "./quota-budget.js";

/** Test-only switch for the carry-over cell's positive control: live renders take settings.json as is. */
function carryDisabled(): boolean {
  return unsafe("RENDER_SETTINGS_MAX");
}

/** The max the running broker booted with ("dynamic" when its config sets none); undefined when none runs. */
export function runningJetStreamMax(layout: RootLayout): JetStreamMax | "dynamic" | undefined {
  if (carryDisabled() || !brokerState(layout).running) return undefined;
  let conf: string;
  try {
    conf = readFileSync(layout.serverConf, "utf8");
  } catch {
    return undefined;
  }
  return renderedJetStreamMax(conf) ?? "dynamic";
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
export function effectiveBudget(layout: RootLayout): EffectiveBudget {
  const budget = resolveBudget(loadSettings(layout)?.jetstream, layout.settingsFile);
  const wanted: JetStreamMax = { file: budget.maxFileStore, memory: budget.maxMemoryStore };
  const running = runningJetStreamMax(layout);
  if (running === undefined) return { budget, render: wanted };
  const same = running !== "dynamic" && running.file === wanted.file && running.memory === wanted.memory;
  const capped = running === "dynamic" ? budget : { ...budget, maxFileStore: Math.min(budget.maxFileStore, running.file), maxMemoryStore: Math.min(budget.maxMemoryStore, running.memory) };
  return { budget: capped, render: running === "dynamic" ? undefined : running, ...(same ? {} : { deferred: { settings: wanted, running } }) };
}
