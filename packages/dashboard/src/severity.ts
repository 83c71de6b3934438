import type { SpaceListEntry, StatusReport } from "@cotal/core";

type SpaceState = SpaceListEntry["state"];

/** How a state is coloured: ok green, warn amber (busy or held: it clears), block red (a verb or the operator must act), muted grey (not known). */
export type Severity = "ok" | "warn" | "block" | "muted";

/** Space states whose tenant is held by a verb in flight or left by one (docs/commands/space.md, `space list`). */
const SPACE: Record<SpaceState, Severity> = {
  active: "ok",
  removing: "warn",
  quiesced: "warn",
  "pending-add": "warn",
  "pending-remove": "warn",
  excluded: "block",
  "disk-only": "block",
  "kv-only": "block",
  "not-in-config": "block",
  unknown: "muted",
};

/** Pure: a space state's colour; a state this table does not know is shown as a block, never as ok. */
export function spaceSeverity(state: string): Severity {
  return (SPACE as Record<string, Severity | undefined>)[state] ?? "block";
}

/** Pure: the root's derived state's colour (docs/vocabulary.md): only `clean` is green, `stopped` amber, every torn or refusing state red. */
export function rootStateSeverity(state: StatusReport["state"]): Severity {
  if (state === "clean") return "ok";
  if (state === "stopped") return "warn";
  return "block";
}

export interface RootVerdict {
  severity: Severity;
  /** The state as shown: the core's word, with the held tenants counted when it reads `clean`. */
  label: string;
  /** The spaces not `active` (and not `unknown`), by name and state. */
  held: { name: string; state: string }[];
}

/**
 * Pure: what the root's headline shows. A `clean` root with a quiesced or half-removed tenant (a
 * JWT-only quiesce leaves the root `clean`: ops/status.ts) is not shown green: it reads
 * "clean, 1 space held" in amber, so no held tenant hides under a green `clean`.
 */
export function rootVerdict(state: StatusReport["state"], spaces: readonly { name: string; state: string }[]): RootVerdict {
  const held = spaces.filter((s) => s.state !== "active" && s.state !== "unknown").map((s) => ({ name: s.name, state: s.state }));
  const base = rootStateSeverity(state);
  if (base !== "ok" || held.length === 0) return { severity: base, label: state, held };
  const worst = held.some((h) => spaceSeverity(h.state) === "block") ? "block" : "warn";
  return { severity: worst, label: `${state}, ${held.length} space${held.length > 1 ? "s" : ""} held`, held };
}
