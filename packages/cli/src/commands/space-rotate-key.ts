import type { SpaceRotateKeyResult } from "@cotal/core";
import { usageError } from "@cotal/core/errors";
import type { Command } from "commander";
import { guardsOf, rootOf, sagaOf } from "../context.js";
import { parseDuration } from "../duration.js";
import { err, json, out } from "../output.js";
import { feedbackFor } from "../feedback.js";
import { spaceVerbFeedback } from "../add-feedback.js";

interface RotateKeyFlags {
  keepOld?: string;
  finish?: boolean;
  queue?: boolean;
  wait: boolean;
  json?: boolean;
}

/** The flags as the core takes them; --keep-old with --finish, or a bad duration, is a usage error (its next: the verb's --help line). */
export function rotateKeyFlags(name: string, flags: Pick<RotateKeyFlags, "keepOld" | "finish">): { keepOldSeconds?: number; finish?: boolean } {
  if (flags.keepOld !== undefined && flags.finish) throw usageError(`space rotate-key ${name}: --keep-old starts a rotation and --finish ends one; name one of them`);
  return { ...(flags.keepOld !== undefined ? { keepOldSeconds: parseDuration(flags.keepOld) } : {}), ...(flags.finish ? { finish: true } : {}) };
}

/** `space rotate-key --queue`: one job, confirmed once gone by the root having no rotation of the space left, or one keeping its old key. */
async function queuedRotateKey(root: string, name: string, sel: { keepOldSeconds?: number; finish?: boolean }, flags: RotateKeyFlags, cmd: Command): Promise<void> {
  const { queuedSingle } = await import("./space-queue.js");
  const confirm = async (): Promise<boolean> => {
    const { status } = await import("@cotal/core");
    const mine = (await status({ root, guards: guardsOf(cmd) })).keyRotations?.find((k) => k.space === name);
    return mine === undefined || (sel.keepOldSeconds !== undefined && mine.stage === "keeping-old");
  };
  const item = { name, ...(sel.keepOldSeconds !== undefined ? { keepOld: sel.keepOldSeconds } : {}), ...(sel.finish ? { finish: true } : {}) };
  return queuedSingle(root, "space-rotate-key", item, { json: flags.json, wait: flags.wait }, confirm);
}

function printRotateKey(r: SpaceRotateKeyResult): void {
  if (r.outcome === "noop") return out(`cotal: space ${r.space} has no signing-key rotation in progress; nothing changed (generation ${r.generation})`);
  const moved = r.reminted.length > 0 ? `; ${r.reminted.length} cred(s) under the root re-signed with it` : "";
  const how = `${r.changes} proven change${r.changes === 1 ? "" : "s"}, generation ${r.generation}`;
  if (r.outcome === "keeping-old") {
    out(`cotal: space ${r.space} signs with ${r.newKey} (${how})${moved}; the old key ${r.oldKey} is kept until ${r.keepOldUntil}`);
    return out(`  next: cotal space rotate-key ${r.space} --finish   # removes the old key: every user it signed is refused`);
  }
  out(`cotal: space ${r.space} signs with ${r.newKey}; the old key ${r.oldKey} is removed, every user it signed is refused (${how})${moved}`);
}

export function registerSpaceRotateKey(space: Command): void {
  space
    .command("rotate-key <name>")
    .description("rotate a space's signing key through the mutation saga: the new key in (proven), cotal's creds re-signed, the old key out (proven)")
    .option("--keep-old <duration>", "keep the old key for this long (90s, 30m, 24h, 7d): its users keep connecting until --finish")
    .option("--finish", "remove the old key of the rotation in progress now")
    .option("--queue", "enqueue it for `cotal worker` (Redis from $REDIS_URL) and follow it")
    .option("--no-wait", "with --queue: return once the job is enqueued")
    .option("--json", "print the result as JSON")
    .action(async (name: string, flags: RotateKeyFlags, cmd: Command) => {
      const sel = rotateKeyFlags(name, flags);
      if (flags.queue) return queuedRotateKey(rootOf(cmd), name, sel, flags, cmd);
      const notice = (m: string) => {
        if (!flags.json) err(`cotal: ${m}`);
      };
      const { spaceRotateKey } = await import("@cotal/core");
      const fb = await feedbackFor(cmd, { verb: "space rotate-key", json: flags.json, unit: "count" });
      let r: SpaceRotateKeyResult;
      try {
        r = await spaceRotateKey({ root: rootOf(cmd), guards: guardsOf(cmd), saga: sagaOf(cmd), name, ...sel, ...spaceVerbFeedback(fb, "space rotate-key", name, notice) });
      } finally {
        fb.bar.stop();
      }
      if (flags.json) return json(r);
      printRotateKey(r);
    });
}
