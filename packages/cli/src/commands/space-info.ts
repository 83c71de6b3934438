import type { SpaceInfo, UsageRow } from "@cotal/core";
import { formatBytes } from "@cotal/core/light";
import type { BackupScheduleEntry } from "@cotal/jobs";
import type { Command } from "commander";
import { guardsOf, rootOf } from "../context.js";
import { json, out } from "../output.js";

/** The space's backup schedules from Redis, or why they could not be read (info never fails on it). */
export type BackupsSection =
  | { reachable: true; redis: string; schedules: Omit<BackupScheduleEntry, "space" | "schedulerId">[] }
  | { reachable: false; redis: string; error: string };

/** `ledger`: the creds ledger's count line (`space users` lists it), absent when the space has no record. */
export type SpaceInfoDocument = SpaceInfo & { backups: BackupsSection; ledger?: string };

/** One reader of the schedules (@cotal/jobs listSchedules, as `jobs schedules`); Redis down is a line, not a refusal. */
async function backupsOf(root: string, space: string): Promise<BackupsSection> {
  const jobs = await import("@cotal/jobs"); // lazy: only info and the queued verbs load ioredis
  const redisUrl = jobs.redisUrlFrom(process.env);
  try {
    const r = await jobs.listSchedules({ root, redisUrl });
    return { reachable: true, redis: r.redis, schedules: r.schedules.filter((s) => s.space === space).map(({ space: _s, schedulerId: _id, ...rest }) => rest) };
  } catch (e) {
    return { reachable: false, redis: jobs.redactRedisUrl(redisUrl), error: (e as Error).message };
  }
}

const BYTE_FIELDS = new Set(["disk", "mem", "payload"]);

/** A quota or usage value as the table shows it: bytes in binary units, -1 as "unlimited", unknown as "-". */
export function cell(field: UsageRow["field"], v: number | null): string {
  if (v === null) return "-";
  if (v === -1) return "unlimited";
  return BYTE_FIELDS.has(field) ? formatBytes(v) : String(v);
}

/** Columns padded to their widest cell, two spaces apart (natscli's `nats account info` look). */
function table(rows: string[][]): string[] {
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? "").length))) ?? [];
  return rows.map((r) => `  ${r.map((c, i) => c.padEnd(widths[i] ?? 0)).join("  ")}`.trimEnd());
}

function backupLines(b: BackupsSection): string[] {
  if (!b.reachable) return [`  unknown: Redis at ${b.redis} is unreachable (${b.error})`];
  if (b.schedules.length === 0) return ["  no backup schedule"];
  return b.schedules.flatMap((s) => {
    const run = s.lastRun ? `${s.lastRun.outcome} at ${s.lastRun.at}${s.lastRun.artifact ? ` (${s.lastRun.artifact})` : ""}${s.lastRun.error ? `: ${s.lastRun.error.message}` : ""}` : "none recorded";
    return [`  ${s.cadence}${s.out ? ` into ${s.out}` : ""}${s.keep !== null ? `, keep ${s.keep}` : ""}; next ${s.next ?? "-"}`, `  last run: ${run}`];
  });
}

/** The human page of `space info`; pure, so the unit test pins it. */
export function renderSpaceInfo(d: SpaceInfoDocument): string[] {
  const head = table([
    ["Space:", d.space],
    ["State:", `${d.state} (root ${d.rootState})`],
    ["Account:", d.publicKey ?? "-"],
    ["Created:", d.createdAt ?? "-"],
    ["Root:", d.root],
    ["Broker:", d.broker.running ? `running ${d.broker.url ?? ""}`.trimEnd() : "not running"],
  ]);
  const limits = table([["", "Used", "Limit", "Use"], ...d.limits.map((r) => [r.field, cell(r.field, r.used), cell(r.field, r.limit), r.percent === null ? "" : `${r.percent.toFixed(1)}%`])]);
  const creds = d.creds.length === 0 ? ["  none under the root"] : table(d.creds.map((c) => [c.user, c.path]));
  return [
    `Space information for ${d.space}`,
    "",
    ...head,
    "",
    "Limits and usage:",
    ...limits,
    ...(d.usage.read ? [] : [`  usage: ${d.usage.reason}`]),
    "",
    "Creds files:",
    ...creds,
    ...(d.ledger ? [`  ledger: ${d.ledger} (cotal space users ${d.space})`] : []),
    "",
    "Backups:",
    ...backupLines(d.backups),
  ];
}

/** The ledger's count line; undefined when the space has no record on disk (info never fails on it). */
async function ledgerLine(root: string, space: string, cmd: Command): Promise<string | undefined> {
  const { spaceUsers, usersSummary } = await import("@cotal/core");
  try {
    return usersSummary(spaceUsers(root, space, guardsOf(cmd)));
  } catch {
    return undefined;
  }
}

export function registerSpaceInfo(space: Command): void {
  space
    .command("info <name>")
    .description("one space: state, limits against usage, creds files, backup schedule, account key (read-only, no lock)")
    .option("--json", "print the result as JSON")
    .action(async (name: string, flags: { json?: boolean }, cmd: Command) => {
      const { spaceInfo } = await import("@cotal/core");
      const info = await spaceInfo({ root: rootOf(cmd), name, guards: guardsOf(cmd) });
      const ledger = await ledgerLine(info.root, info.space, cmd);
      const doc: SpaceInfoDocument = { ...info, backups: await backupsOf(info.root, info.space), ...(ledger ? { ledger } : {}) };
      if (flags.json) return json(doc);
      for (const l of renderSpaceInfo(doc)) out(l);
    });
}
