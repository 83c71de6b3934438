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

export type SpaceInfoDocument = SpaceInfo & { backups: BackupsSection };

type InfoUser = Extract<SpaceInfo["users"], { read: true }>["rows"][number];

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

/** The expiry cell: `never (no expiry)` flagged, and an expired or near one said so (core's credExpiry). */
function expiryCell(u: InfoUser): string {
  if (u.expiry === "never") return "never (NO EXPIRY)";
  return `${u.expiresAt ?? "-"}${u.expiry === "expired" ? " (EXPIRED)" : u.expiry === "soon" ? " (expires soon)" : ""}`;
}

function stateCell(u: InfoUser): string {
  const state = u.revokedAt ? `revoked (${u.revokedAt})` : u.state;
  return u.source === "ledger" ? state : `${state}, unknown (minted before the ledger)`;
}

/** The creds ledger as a table (`space users`, with expiry weighed, permissions and short keys), or why it is absent. */
function ledgerLines(d: SpaceInfoDocument): string[] {
  const u = d.users;
  if (!u.read) return [`  ledger: not read: ${u.reason}`];
  if (u.rows.length === 0) return ["  no cred minted yet"];
  const rows = u.rows.map((x) => [x.user, x.keyShort, x.issuedAt, expiryCell(x), x.admin ? "admin" : "user", stateCell(x), x.permissionsSummary, `${x.path}${x.onDisk ? "" : " (replaced or gone)"}`]);
  return [`  ${u.summary}`, ...table([["USER", "KEY", "ISSUED", "EXPIRES", "ROLE", "STATE", "PERMISSIONS", "FILE"], ...rows]), ...(u.unreadable > 0 ? [`  (${u.unreadable} ledger line(s) unreadable)`] : [])];
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
  // the ledger names the user creds; the files list adds what it cannot (the $SYS observer)
  const listed = new Set(d.users.read ? d.users.rows.map((u) => u.path) : []);
  const others = d.creds.filter((c) => !listed.has(c.path));
  const creds = others.length === 0 ? [] : ["", "Other creds files:", ...table(others.map((c) => [c.user, c.path]))];
  return [
    `Space information for ${d.space}`,
    "",
    ...head,
    "",
    "Limits and usage:",
    ...limits,
    ...(d.usage.read ? [] : [`  usage: ${d.usage.reason}`]),
    "",
    `Creds (the ledger, as cotal space users ${d.space} lists it):`,
    ...ledgerLines(d),
    ...creds,
    "",
    "Backups:",
    ...backupLines(d.backups),
  ];
}

export function registerSpaceInfo(space: Command): void {
  space
    .command("info <name>")
    .description("one space: state, limits against usage, its creds ledger, backup schedule, account key (read-only, no lock)")
    .option("--json", "print the result as JSON")
    .action(async (name: string, flags: { json?: boolean }, cmd: Command) => {
      const { spaceInfo } = await import("@cotal/core");
      const info = await spaceInfo({ root: rootOf(cmd), name, guards: guardsOf(cmd) });
      const doc: SpaceInfoDocument = { ...info, backups: await backupsOf(info.root, info.space) };
      if (flags.json) return json(doc);
      for (const l of renderSpaceInfo(doc)) out(l);
    });
}
