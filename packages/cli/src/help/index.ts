import { Help, type Command } from "commander";
import { BACKUP_HELP } from "./backup.js";
import { BROKER_HELP } from "./broker.js";
import { DASHBOARD_HELP } from "./dashboard.js";
import { exitLines } from "./exits.js";
import { JOBS_HELP } from "./jobs.js";
import { METRICS_HELP } from "./metrics.js";
import { NODE_HELP } from "./node.js";
import { SPACE_HELP } from "./space.js";
import type { HelpTable, VerbHelp } from "./types.js";

export type { HelpTable, VerbHelp } from "./types.js";
export { EXIT_MEANING, exitLines } from "./exits.js";

/** Every verb's summary, examples and exit codes, keyed by command path (issue #31). */
export const HELP: HelpTable = { ...BROKER_HELP, ...SPACE_HELP, ...BACKUP_HELP, ...JOBS_HELP, ...NODE_HELP, ...DASHBOARD_HELP, ...METRICS_HELP };

/** "space add" for the `add` under `space`. */
export function pathOf(cmd: Command): string {
  const names: string[] = [];
  for (let c: Command | null = cmd; c?.parent; c = c.parent) names.unshift(c.name());
  return names.join(" ");
}

/** Every command without subcommands, in the order they were registered. */
export function leafCommands(program: Command): Command[] {
  return program.commands.flatMap((c) => (c.commands.length === 0 ? [c] : leafCommands(c)));
}

/**
 * The leaf's help, cheat-sheet style: usage, summary, the description, then Examples before the
 * flags (each flag with its default), the global flags, and the exit codes last.
 */
function formatLeafHelp(entry: VerbHelp) {
  return function formatHelp(this: Help, cmd: Command, helper: Help): string {
    const lines = Help.prototype.formatHelp.call(this, cmd, helper).split("\n");
    const at = lines.findIndex((l) => /^(Arguments|Options):$/.test(l));
    const examples = ["Examples:", ...entry.examples.map((e) => `  ${e}`), ""];
    lines.splice(at === -1 ? lines.length : at, 0, ...examples);
    while (lines.at(-1) === "") lines.pop();
    return [...lines, "", "Exit codes:", ...exitLines(entry.errors), ""].join("\n");
  };
}

/** The description under the usage line: the one-line summary first, then what the verb does. */
function describe(entry: VerbHelp) {
  return (cmd: Command): string => `${entry.summary}\n\n${cmd.description()}`;
}

/**
 * Hands every leaf command its help entry (no command file needs to know); a leaf without one
 * keeps commander's plain help. The group listings show the short summaries.
 */
export function attachHelp(program: Command, table: HelpTable = HELP): void {
  for (const leaf of leafCommands(program)) {
    const entry = table[pathOf(leaf)];
    if (!entry) continue;
    leaf.summary(entry.summary);
    leaf.configureHelp({ ...leaf.configureHelp(), showGlobalOptions: true, commandDescription: describe(entry), formatHelp: formatLeafHelp(entry) });
  }
}
