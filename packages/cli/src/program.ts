import { Command, CommanderError, Option } from "commander";
import { registerArtifact } from "./commands/artifact.js";
import { registerBroker } from "./commands/broker.js";
import { registerBackup } from "./commands/backup.js";
import { registerDashboard } from "./commands/dashboard.js";
import { registerDown } from "./commands/down.js";
import { registerJobs } from "./commands/jobs.js";
import { registerMetrics } from "./commands/metrics.js";
import { registerNode } from "./commands/node.js";
import { registerSpace } from "./commands/space.js";
import { registerStatus } from "./commands/status.js";
import { registerUp } from "./commands/up.js";
import { registerWorker } from "./commands/worker.js";
import { EXIT } from "./exit-codes.js";
import { attachHelp } from "./help/index.js";
import { isCotalError, renderRerun, CotalError, usageError } from "@cotal/core/errors";
import { GUARDS_ON, type Guards, type SagaLimits } from "@cotal/core/light";
import { handGuardsTo } from "./context.js";
import { printableArgv, report, setInvocation } from "./output.js";
import { requireRootBeforeVerbs } from "./root-hook.js";
import { VERSION } from "./version.js";

export function buildProgram(guards: Guards = GUARDS_ON, saga: SagaLimits = {}): Command {
  const program = new Command("cotal")
    .description("tenant lifecycle for a shared NATS broker (one account per space)")
    .option("--root <dir>", "broker root (default: $COTAL_ROOT or ./.cotal)")
    .addOption(new Option("--log-format <format>", "structured log lines on stderr (pino) for the worker and long verbs, instead of progress bars").choices(["json", "pretty"]))
    .version(VERSION, "-V, --version", "print cotal's version")
    .exitOverride()
    // Usage errors are reported once, by `report`, with a next step; commander stays quiet about them.
    // Its help still prints: a bare group (`cotal space`) shows the group's help on stderr.
    .configureOutput({ outputError: () => undefined });
  handGuardsTo(program, guards, saga);
  registerUp(program);
  registerDown(program);
  registerStatus(program);
  registerSpace(program);
  registerJobs(program);
  registerWorker(program);
  registerBackup(program);
  registerArtifact(program);
  registerBroker(program);
  registerNode(program);
  registerDashboard(program);
  registerMetrics(program);
  attachHelp(program); // every leaf's summary, examples and exit codes (help/, issue #31)
  requireRootBeforeVerbs(program);
  return program;
}

/** The subcommands `argv` names (`space add`), walked through the program's tree; option values are skipped. */
export function commandPath(program: Command, argv: readonly string[]): string[] {
  const path: string[] = [];
  let cur = program;
  for (const a of argv) {
    if (a === "--") break;
    const sub = a.startsWith("-") ? undefined : cur.commands.find((c) => c.name() === a || c.aliases().includes(a));
    if (sub) {
      path.push(a);
      cur = sub;
    } else if (!a.startsWith("-") && cur.commands.length === 0) break; // a positional of the leaf command
  }
  return path;
}

/** `cotal --root <abs> <the command> --help`: a line that runs as printed and shows every flag of the refused command. */
export function helpLine(program: Command, argv: readonly string[]): string {
  const [rootFlag, root, ...rest] = printableArgv(argv);
  return renderRerun([rootFlag as string, root as string, ...commandPath(program, rest), "--help"]);
}

const INPUT_CODES = new Set(["usage", "invalid-argument", "invalid-space-name"]);

/**
 * A refused command line always prints a way out: one whose refusal names no runnable `next` gets the
 * command's own --help line (issue #28: `--max-subs -2` and unit errors printed none).
 */
export function withUsageNext(e: unknown, help: string): unknown {
  if (e instanceof CommanderError) return usageError(e.message.replace(/^error: /, ""), help);
  if (!isCotalError(e) || !INPUT_CODES.has(e.code) || e.next !== undefined) return e;
  return new CotalError(e.code, e.message, { next: help, ...(e.details ? { details: e.details } : {}), cause: e });
}

/** Runs the CLI and returns the exit code; output goes through `report` exactly once per failure. */
export async function main(argv: string[], env: { guards?: Guards; saga?: SagaLimits } = {}): Promise<number> {
  const asJson = argv.includes("--json");
  setInvocation(argv);
  const program = buildProgram(env.guards, env.saga);
  try {
    await program.parseAsync(argv, { from: "user" });
    return typeof process.exitCode === "number" ? process.exitCode : EXIT.ok;
  } catch (e) {
    // --help and --version exit through here with code 0; a bare group's help (commander.help, exit 1) is a usage exit.
    if (e instanceof CommanderError && (e.exitCode === 0 || e.code === "commander.helpDisplayed")) return EXIT.ok;
    if (e instanceof CommanderError && e.code === "commander.help") return EXIT.usage;
    return report(withUsageNext(e, helpLine(program, argv)), asJson);
  }
}
