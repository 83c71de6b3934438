import { mintSpaceCreds } from "@cotal/saga";
import type { Command } from "commander";
import { rootOf } from "../context.js";
import { parseDuration } from "../duration.js";
import { json, out } from "../output.js";

interface CredsFlags {
  user?: string;
  allowPub?: string[];
  allowSub?: string[];
  expires?: string;
  out?: string;
  json?: boolean;
}

const collect = (v: string, prev: string[] = []) => [...prev, v];

export function registerSpace(program: Command): void {
  const space = program.command("space").description("per-space lifecycle verbs");
  space
    .command("creds <name>")
    .description("mint a user creds file signed by the space's signing key (connects only to that space)")
    .option("--user <user>", "user name (default admin)")
    .option("--allow-pub <subject>", "allow publishing on subject (repeatable)", collect)
    .option("--allow-sub <subject>", "allow subscribing on subject (repeatable)", collect)
    .option("--expires <duration>", "expiry, e.g. 90s, 30m, 24h, 7d")
    .option("--out <file>", "where to write the creds file (default: the root's space directory)")
    .option("--json", "print the result as JSON")
    .action((name: string, flags: CredsFlags, cmd: Command) => {
      const r = mintSpaceCreds({
        root: rootOf(cmd),
        space: name,
        ...(flags.user ? { user: flags.user } : {}),
        ...(flags.allowPub ? { allowPub: flags.allowPub } : {}),
        ...(flags.allowSub ? { allowSub: flags.allowSub } : {}),
        ...(flags.expires ? { expiresInSeconds: parseDuration(flags.expires) } : {}),
        ...(flags.out ? { out: flags.out } : {}),
      });
      if (flags.json) json(r);
      else out(`cotal: wrote ${r.path} (user ${r.user} of space ${r.space}${r.expiresAt ? `, expires ${r.expiresAt}` : ""})`);
    });
}
