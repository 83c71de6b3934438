import type { SpaceListReport } from "@cotal/core";
import type { SpaceQuota } from "@cotal/core/light";
import { QUOTA_FIELDS, assertSpaceName, formatBytes } from "@cotal/core/light";
import type { Command } from "commander";
import { guardsOf, rootOf, sagaOf } from "../context.js";
import { parseDuration } from "../duration.js";
import { err, json, out } from "../output.js";
import { readTenantsFile } from "../tenants-file.js";
import { registerSpaceInfo } from "./space-info.js";
import { registerSpaceRevoke, registerSpaceUsers } from "./space-revoke.js";
import { registerSpaceRotateKey } from "./space-rotate-key.js";
import { QUOTA_FLAGS, quotaFromFlags, type QuotaFlagValues } from "../quota-flags.js";
import { rerunWith, usageError } from "@cotal/core/errors";
import { printRemovedSchedules, queuedSingle, queuedSpaceAdd, unscheduleRemoved } from "./space-queue.js";
import { summariseNames } from "../batch-summary.js";
import { feedbackFor } from "../feedback.js";
import { addFeedback, spaceVerbFeedback } from "../add-feedback.js";
import { confirmOrRefuse } from "../confirm.js";

/** The template's streams and buckets of a space, by name: what its removal deletes at the least. */
async function templateNames(space: string): Promise<string> {
  const { spaceTemplate } = await import("@cotal/core/provision");
  const t = spaceTemplate(space);
  return [...t.streams.map((x) => x.name), ...t.buckets.map((b) => b.bucket)].join(", ");
}

interface CredsFlags {
  user?: string;
  admin?: boolean;
  allowPub?: string[];
  allowSub?: string[];
  expires?: string;
  out?: string;
  json?: boolean;
}

const collect = (v: string, prev: string[] = []) => [...prev, v];

function showQuota(field: keyof SpaceQuota, value: number): string {
  if (value === -1) return "unlimited";
  return field === "disk" || field === "mem" || field === "payload" ? formatBytes(value) : String(value);
}

/** A saga's notice as a stderr line, unless the output is --json. */
const notice = (quiet?: boolean) => (m: string) => {
  if (!quiet) err(`cotal: ${m}`);
};

export function registerSpace(program: Command): void {
  const space = program.command("space").description("per-space lifecycle verbs");
  registerSpaceAdd(space);
  registerSpaceRm(space);
  registerSpaceLimits(space);
  registerSpaceInfo(space);
  registerSpaceList(space);
  registerSpaceCreds(space);
  registerSpaceRevoke(space);
  registerSpaceRotateKey(space);
  registerSpaceUsers(space);
}

function registerSpaceAdd(space: Command): void {
  const add = space
    .command("add [names...]")
    .description("add spaces through the mutation saga: one generation and one reload for the whole batch")
    .option("--from <file>", "read space names from a file, one per line")
    .option("--limits <file>", "limits for the new spaces: a JSON object of quota fields (README \"Quotas\")");
  for (const [flag, help] of QUOTA_FLAGS) add.option(flag, `${help} (default: the root's template)`);
  add
    .option("--json", "print the result as JSON")
    .option("--queue", "enqueue one job per space for `cotal worker` (Redis from $REDIS_URL) and follow them")
    .option("--no-wait", "with --queue: return once the jobs are enqueued")
    .action(async (names: string[], flags: QuotaFlagValues & { from?: string; json?: boolean; queue?: boolean; wait: boolean }, cmd: Command) => {
      const all = [...names, ...(flags.from ? readTenantsFile(flags.from) : [])];
      const quota = quotaFromFlags(flags);
      if (flags.queue) {
        if (Object.keys(quota).length > 0) throw usageError("--queue adds spaces with the template's limits only", `${rerunWith({ "--queue": null, "--no-wait": null })}   # the same add, direct: the limits need the saga of this process`);
        const { bar, log } = await feedbackFor(cmd, { verb: "space add", json: flags.json, unit: "count" });
        return queuedSpaceAdd(rootOf(cmd), all, { json: flags.json, wait: flags.wait, bar, log, guards: guardsOf(cmd) });
      }
      // The saga's phases, then provisioning: a status line or bar on a TTY, log lines with --log-format (add-feedback.ts).
      const { spaceAdd } = await import("@cotal/core");
      const fb = await feedbackFor(cmd, { verb: "space add", json: flags.json, unit: "count" });
      let r;
      try {
        r = await spaceAdd({ root: rootOf(cmd), guards: guardsOf(cmd), saga: sagaOf(cmd), names: all, quota, ...addFeedback(fb, all.length, notice(flags.json)) });
      } finally {
        fb.bar.stop();
      }
      if (flags.json) return json(r);
      if (r.outcome === "noop") out(`cotal: ${r.requested.length === 1 ? `space ${r.requested[0]} already exists` : "every space already exists"}; nothing changed (generation ${r.generation}); provisioning re-checked`);
      else out(`cotal: added ${summariseNames(r.added)} at generation ${r.generation} (${r.reloads} reload${r.reloads === 1 ? "" : "s"}, ${r.attempts} attempt${r.attempts === 1 ? "" : "s"})`);
      out(`  next: cotal space creds ${r.requested[0]}`);
    });
}

function registerSpaceRm(space: Command): void {
  space
    .command("rm <name>")
    .description("remove a space: journal, delete its streams (the point of no return), re-render, reap its material")
    .option("--yes", "confirm the removal (asked on a TTY; refused without it anywhere else)")
    .option("--queue", "enqueue it for `cotal worker` (Redis from $REDIS_URL) and follow it")
    .option("--no-wait", "with --queue: return once the job is enqueued")
    .option("--json", "print the result as JSON")
    .action(async (name: string, flags: { yes?: boolean; json?: boolean; queue?: boolean; wait: boolean }, cmd: Command) => {
      // Confirmed before the lock, the queue or the broker is touched (issue #31); a queued job does not ask again.
      const space = assertSpaceName(name, guardsOf(cmd));
      await confirmOrRefuse({ yes: flags.yes, question: `remove space ${space} (its account, streams and KV data, for good)?`, what: `space rm deletes space ${space} for good: its account, every stream and KV bucket it holds (${await templateNames(space)} and any other) and its local files` });
      const { spaceList, spaceRm } = await import("@cotal/core");
      if (flags.queue) {
        const root = rootOf(cmd);
        const guards = guardsOf(cmd);
        return queuedSingle(root, "space-rm", { name: space }, { json: flags.json, wait: flags.wait }, async () => !(await spaceList({ root, guards })).spaces.some((s) => s.name === name));
      }
      // The preamble's and the saga's phases as a status line on a TTY, log lines with --log-format (add-feedback.ts).
      const fb = await feedbackFor(cmd, { verb: "space rm", json: flags.json, unit: "count" });
      let r;
      try {
        r = await spaceRm({ root: rootOf(cmd), guards: guardsOf(cmd), saga: sagaOf(cmd), name, ...spaceVerbFeedback(fb, "space rm", space, notice(flags.json)) });
      } finally {
        fb.bar.stop();
      }
      const schedules = await unscheduleRemoved(rootOf(cmd), r.space); // a removed tenant keeps no backup schedule
      if (flags.json) return json({ ...r, backupSchedules: schedules });
      if (r.outcome === "absent") {
        out(`cotal: space ${name} does not exist${schedules.outcome === "removed" ? "" : "; nothing changed"}`);
        return printRemovedSchedules(name, schedules);
      }
      for (const n of r.notes) err(`cotal: ${n}`);
      out(`cotal: removed space ${name}${r.saga ? ` at generation ${r.saga.generation}` : ""}${r.brokerRunning ? "" : " (promoted; `cotal up` commits it)"}; deleted streams: ${r.deletedStreams.join(", ") || "none"}`);
      if (r.eviction && r.eviction.outcome !== "none") out(`  live connections: ${r.eviction.outcome === "evicted" ? `${r.eviction.kicked.length} cut by the evictor` : `${r.eviction.outcome} (${r.eviction.reason ?? ""})`}`);
      printRemovedSchedules(name, schedules);
    });
}

function registerSpaceLimits(space: Command): void {
  const limits = space
    .command("limits <name>")
    .description("print a space's limits, or change them through the mutation saga (re-signed JWT, re-render, proven reload)")
    .option("--limits <file>", "a JSON object of quota fields (README \"Quotas\")");
  for (const [flag, help] of QUOTA_FLAGS) limits.option(flag, `${help} (default: unchanged)`);
  limits.option("--force", "accept a disk or stream quota below what the space already stores (its writes fail until it deletes data)");
  limits.option("--json", "print the result as JSON").action(async (name: string, flags: QuotaFlagValues & { json?: boolean; force?: boolean }, cmd: Command) => {
    const quota = quotaFromFlags(flags);
    const { showSpaceLimits, spaceLimits } = await import("@cotal/core");
    if (Object.keys(quota).length === 0) {
      const r = showSpaceLimits(rootOf(cmd), name, guardsOf(cmd));
      if (flags.json) return json(r);
      out(`space ${r.space}:`);
      for (const f of QUOTA_FIELDS) out(`  ${f.padEnd(10)} ${showQuota(f, r.quota[f])}`);
      return;
    }
    const fb = await feedbackFor(cmd, { verb: "space limits", json: flags.json, unit: "count" });
    let r;
    try {
      r = await spaceLimits({ root: rootOf(cmd), guards: guardsOf(cmd), saga: sagaOf(cmd), name, quota, ...(flags.force ? { force: true } : {}), ...spaceVerbFeedback(fb, "space limits", name, notice(flags.json)) });
    } finally {
      fb.bar.stop();
    }
    if (flags.json) return json(r);
    if (r.outcome === "noop") return out(`cotal: space ${name} already has these limits; nothing changed (generation ${r.generation})`);
    const changed = QUOTA_FIELDS.filter((f) => r.before[f] !== r.after[f]).map((f) => `${f} ${showQuota(f, r.before[f])} -> ${showQuota(f, r.after[f])}`);
    out(`cotal: space ${name} limits changed at generation ${r.generation} (${r.reloads} reload${r.reloads === 1 ? "" : "s"}): ${changed.join(", ")}`);
  });
}

function registerSpaceList(space: Command): void {
  space
    .command("list")
    .description("every space on disk or in the KV inventory, with its state")
    .option("--json", "print the list as JSON")
    .action(async (flags: { json?: boolean }, cmd: Command) => {
      const { spaceList } = await import("@cotal/core");
      const r: SpaceListReport = await spaceList({ root: rootOf(cmd), guards: guardsOf(cmd) });
      if (flags.json) return json(r);
      out(`${r.spaces.length} space(s)${r.generation !== null ? `, generation ${r.generation}` : ""}; broker state ${r.state}`);
      for (const s of r.spaces) out(`  ${s.name.padEnd(24)} ${s.state.padEnd(14)} ${s.publicKey ?? ""}`);
      for (const c of r.corrupt) out(`  CORRUPT ${c.path}: ${c.reason}`);
      if (r.inventoryError) out(`  (kv: ${r.inventoryError})`);
    });
}

function registerSpaceCreds(space: Command): void {
  space
    .command("creds <name>")
    .description("mint a user creds file signed by the space's signing key (connects only to that space)")
    .option("--user <user>", "user name (default: user, or admin with --admin)")
    .option("--admin", "full JetStream API of the space (create, reconfigure, delete streams); default users cannot")
    .option("--allow-pub <subject>", "allow publishing on subject (repeatable) (default: all of the space's subjects)", collect)
    .option("--allow-sub <subject>", "allow subscribing on subject (repeatable) (default: all of the space's subjects)", collect)
    .option("--expires <duration>", "expiry, e.g. 90s, 30m, 24h, 7d (default: never)")
    .option("--out <file>", "where to write the creds file (default: the root's space directory)")
    .option("--json", "print the result as JSON")
    .action(async (name: string, flags: CredsFlags, cmd: Command) => {
      const { mintSpaceCreds } = await import("@cotal/core");
      const r = mintSpaceCreds({
        root: rootOf(cmd),
        guards: guardsOf(cmd),
        space: name,
        ...(flags.user ? { user: flags.user } : {}),
        ...(flags.admin ? { admin: true } : {}),
        ...(flags.allowPub ? { allowPub: flags.allowPub } : {}),
        ...(flags.allowSub ? { allowSub: flags.allowSub } : {}),
        ...(flags.expires ? { expiresInSeconds: parseDuration(flags.expires) } : {}),
        ...(flags.out ? { out: flags.out } : {}),
        onNotice: (m) => err(`cotal: warning: ${m}`), // on stderr with --json too: a cred no one can let expire
      });
      if (flags.json) json(r);
      else out(`cotal: wrote ${r.path} (${r.role === "admin" ? "admin" : "user"} ${r.user} of space ${r.space}${r.expiresAt ? `, expires ${r.expiresAt}` : ""})`);
    });
}
