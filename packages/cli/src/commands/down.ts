import { down } from "@cotal/saga";
import type { Command } from "commander";
import { rootOf } from "../context.js";
import { json, out } from "../output.js";

export function registerDown(program: Command): void {
  program
    .command("down")
    .description("stop the broker (a stopped broker is a no-op success)")
    .option("--json", "print the result as JSON")
    .action(async (flags: { json?: boolean }, cmd: Command) => {
      const r = await down({ root: rootOf(cmd) });
      if (flags.json) json(r);
      else if (r.stopped) out(`cotal: stopped nats-server (pid ${r.pid}${r.forced ? ", killed after the grace period" : ""})`);
      else out(`cotal: no broker is running for ${r.root}`);
    });
}
