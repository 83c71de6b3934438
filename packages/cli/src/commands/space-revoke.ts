import type { SpaceRevokeResult, SpaceUsersReport } from "@cotal/core";
import { rerunWith, usageError } from "@cotal/core/errors";
import type { Command } from "commander";
import { guardsOf, rootOf, sagaOf } from "../context.js";
import { err, json, out } from "../output.js";
import { feedbackFor } from "../feedback.js";
import { spaceVerbFeedback } from "../add-feedback.js";

interface RevokeFlags {
  queue?: boolean;
  wait: boolean;
  user?: string;
  key?: string;
  before?: string;
  force?: boolean;
  json?: boolean;
}

/** `--before`: ISO 8601 or whole unix seconds → unix seconds; anything else is a usage error. */
export function parseBefore(text: string, space: string): number {
  const t = text.trim();
  const seconds = /^\d+$/.test(t) ? Number(t) : Math.floor(Date.parse(t) / 1000);
  if (!Number.isSafeInteger(seconds) || seconds <= 0) {
    // no next of its own: the verb's --help line (program.ts withUsageNext), which runs as printed; a
    // guessed time would revoke more or less than the operator meant
    throw usageError(`space revoke ${space}: invalid --before ${JSON.stringify(text)}: an ISO 8601 time (2026-12-01T00:00:00Z) or unix seconds`);
  }
  return seconds;
}

/** A user key as nats prints it: "U" and 55 base32 characters (the core checks its checksum). */
const USER_KEY = /^U[A-Z2-7]{55}$/;

function checkedFlags(space: string, flags: RevokeFlags): { user?: string; key?: string; before?: number } {
  if ((flags.user === undefined) === (flags.key === undefined)) {
    throw usageError("name exactly one of --user NAME and --key UPUBKEY", `cotal space users ${space}   # lists the users and keys`);
  }
  if (flags.key !== undefined && !USER_KEY.test(flags.key)) throw usageError(`--key ${JSON.stringify(flags.key)} is not a user public key (U…, 56 characters)`, `cotal space users ${space}`);
  if (flags.force && flags.key === undefined) throw usageError("--force goes with --key only (a key the root does not know)", rerunWith({ "--force": null }));
  return { ...(flags.user !== undefined ? { user: flags.user } : {}), ...(flags.key !== undefined ? { key: flags.key } : {}), ...(flags.before !== undefined ? { before: parseBefore(flags.before, space) } : {}) };
}

/** `space revoke --queue`: one job (its id names the space and what it revokes), confirmed against the account JWT once gone. */
async function queuedRevoke(root: string, name: string, sel: { user?: string; key?: string; before?: number }, flags: RevokeFlags, cmd: Command): Promise<void> {
  const { queuedSingle } = await import("./space-queue.js");
  const confirm = async (): Promise<boolean> => {
    const { spaceUsers } = await import("@cotal/core");
    const mine = spaceUsers(root, name, guardsOf(cmd)).users.filter((u) => (sel.user !== undefined ? u.user === sel.user : u.publicKey === sel.key));
    // A forced key the root does not know has no row to read back; the job's completion is the word there.
    return mine.length === 0 ? flags.force === true : mine.some((u) => u.state === "revoked");
  };
  return queuedSingle(root, "space-revoke", { name, ...sel, ...(flags.force ? { force: true } : {}) }, { json: flags.json, wait: flags.wait }, confirm);
}

function printRevoke(r: SpaceRevokeResult): void {
  const who = r.revoked.map((c) => `${c.user ?? "?"} ${c.publicKey}`).join(", ");
  if (r.outcome === "noop") return out(`cotal: already revoked in space ${r.space}: ${who}; nothing changed (generation ${r.generation})`);
  out(`cotal: revoked in space ${r.space} at generation ${r.generation} (${r.reloads} reload${r.reloads === 1 ? "" : "s"}): ${who}; creds issued at or before ${r.before} are refused`);
  if (r.pruned.length > 0) out(`  pruned ${r.pruned.length} revocation(s) of creds that have expired since`);
  if (r.outcome === "promoted") out("  promoted, not yet proven: `cotal up` commits it");
  if (r.eviction && r.eviction.outcome !== "none") out(`  live connections: ${r.eviction.outcome === "evicted" ? `${r.eviction.kicked.length} cut by the evictor` : `${r.eviction.outcome} (${r.eviction.reason ?? ""})`}`);
}

export function registerSpaceRevoke(space: Command): void {
  space
    .command("revoke <name>")
    .description("revoke a user's creds through the mutation saga (re-signed JWT, proven reload), then cut its connections")
    .option("--user <user>", "every cred of this user name the root knows of (space users lists them)")
    .option("--key <upubkey>", "one cred, by its user public key (U…)")
    .option("--before <time>", "only creds issued at or before this time: ISO 8601 or unix seconds (default: now)")
    .option("--force", "with --key: revoke a key neither the ledger nor the root's creds files know")
    .option("--queue", "enqueue it for `cotal worker` (Redis from $REDIS_URL) and follow it")
    .option("--no-wait", "with --queue: return once the job is enqueued")
    .option("--json", "print the result as JSON")
    .action(async (name: string, flags: RevokeFlags, cmd: Command) => {
      const sel = checkedFlags(name, flags);
      if (flags.queue) return queuedRevoke(rootOf(cmd), name, sel, flags, cmd);
      const notice = (m: string) => {
        if (!flags.json) err(`cotal: ${m}`);
      };
      const { spaceRevoke } = await import("@cotal/core");
      // The preamble's and the saga's phases as a status line on a TTY, log lines with --log-format (add-feedback.ts).
      const fb = await feedbackFor(cmd, { verb: "space revoke", json: flags.json, unit: "count" });
      let r: SpaceRevokeResult;
      try {
        r = await spaceRevoke({ root: rootOf(cmd), guards: guardsOf(cmd), saga: sagaOf(cmd), name, ...sel, ...(flags.force ? { force: true } : {}), ...spaceVerbFeedback(fb, "space revoke", name, notice) });
      } finally {
        fb.bar.stop();
      }
      if (flags.json) return json(r);
      printRevoke(r);
    });
}

/** The human table of `space users`; pure, so a unit test pins it. */
export function renderSpaceUsers(r: SpaceUsersReport): string[] {
  if (r.users.length === 0) return [`space ${r.space}: no cred minted yet`];
  const rows = [["USER", "KEY", "ISSUED", "EXPIRES", "ROLE", "STATE", "FILE"]];
  for (const u of r.users) {
    const state = u.source === "ledger" ? u.state : `${u.state}, unknown (minted before the ledger)`;
    rows.push([u.user, u.publicKey, u.issuedAt, u.expiresAt ?? "never", u.admin ? "admin" : "user", state, `${u.path}${u.onDisk ? "" : " (replaced or gone)"}`]);
  }
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((x) => (x[i] ?? "").length))) ?? [];
  const lines = rows.map((x) => x.map((c, i) => c.padEnd(widths[i] ?? 0)).join("  ").trimEnd());
  if (r.unreadable > 0) lines.push(`(${r.unreadable} ledger line(s) unreadable)`);
  return lines;
}

export function registerSpaceUsers(space: Command): void {
  space
    .command("users <name>")
    .description("every cred minted for a space (the creds ledger), with its state; creds minted before the ledger show as unknown")
    .option("--json", "print the list as JSON")
    .action(async (name: string, flags: { json?: boolean }, cmd: Command) => {
      const { spaceUsers } = await import("@cotal/core");
      const r = spaceUsers(rootOf(cmd), name, guardsOf(cmd));
      if (flags.json) return json(r);
      for (const line of renderSpaceUsers(r)) out(line);
    });
}
