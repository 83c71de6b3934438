import type { Command } from "commander";
import { guardsOf, rootOf } from "../context.js";
import { json, out, shellWord } from "../output.js";

export function registerDown(program: Command): void {
  program
    .command("down")
    .description("stop the broker (a stopped broker is a no-op success)")
    .option("--preserve-state", "journal a cut (cut-intent → cut-committed → ready) so `cotal space backup|restore` can read the stopped store")
    .option("--json", "print the result as JSON")
    .action(async (flags: { json?: boolean; preserveState?: boolean }, cmd: Command) => {
      const { down } = await import("@cotal/core");
      const r = await down({ root: rootOf(cmd), guards: guardsOf(cmd), ...(flags.preserveState ? { preserveState: true } : {}) });
      if (flags.json) json(r);
      else if (r.cut) out(`cotal: ${r.cut.already ? "cut already ready" : `stopped the broker${r.pid ? ` (pid ${r.pid})` : ""}; cut ${r.cut.cutId} is ready`}; next: cotal space list   # back up each space offline (cotal space backup NAME --out DIR), then cotal up`);
      else if (r.stopped) out(`cotal: stopped nats-server (${r.pid !== undefined ? `pid ${r.pid}` : "no recorded broker"}${r.strays?.length ? `; unrecorded servers of this root: ${r.strays.map((p) => `pid ${p}`).join(", ")}` : ""}${r.forced ? "; killed after the grace period" : ""})`);
      else out(`cotal: no broker is running for ${r.root}`);
      if (!flags.json && r.elsewhere?.length) out(`cotal: node${r.elsewhere.length > 1 ? "s" : ""} ${r.elsewhere.join(", ")} on other hosts keep running: each is stopped on its own host (its cotal node run first, then cotal --root ${shellWord(r.root)} down there)`);
    });
}
