import { Command, CommanderError, Option } from "commander";
import { registerArtifact } from "./commands/artifact.js";
import { registerBroker } from "./commands/broker.js";
import { registerBackup } from "./commands/backup.js";
import { registerDashboard } from "./commands/dashboard.js";
import { registerDown } from "./commands/down.js";
import { registerJobs } from "./commands/jobs.js";
import { registerNode } from "./commands/node.js";
import { registerSpace } from "./commands/space.js";
import { registerStatus } from "./commands/status.js";
import { registerUp } from "./commands/up.js";
import { registerWorker } from "./commands/worker.js";
import { EXIT } from "./exit-codes.js";
import { report, setInvocation } from "./output.js";
import { UsageError } from "./errors.js";

export function buildProgram(): Command {
  const program = new Command("cotal")
    .description("tenant lifecycle for a shared NATS broker (one account per space)")
    .option("--root <dir>", "broker root (default: $COTAL_ROOT or ./.cotal)")
    .addOption(new Option("--log-format <format>", "structured log lines on stderr (pino) for the worker and long verbs, instead of progress bars").choices(["json", "pretty"]))
    .exitOverride()
    // Usage errors are reported once, by `report`, with a next step; commander stays quiet about them.
    .configureOutput({ writeErr: () => undefined });
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
  return program;
}

/** Runs the CLI and returns the exit code; output goes through `report` exactly once per failure. */
export async function main(argv: string[]): Promise<number> {
  const asJson = argv.includes("--json");
  setInvocation(argv);
  const program = buildProgram();
  try {
    await program.parseAsync(argv, { from: "user" });
    return typeof process.exitCode === "number" ? process.exitCode : EXIT.ok;
  } catch (e) {
    if (e instanceof CommanderError) {
      // --help and --version exit through here with code 0; usage mistakes with 1.
      if (e.exitCode === 0 || e.code === "commander.helpDisplayed" || e.code === "commander.help") return EXIT.ok;
      return report(new UsageError(e.message.replace(/^error: /, "")), asJson);
    }
    return report(e, asJson);
  }
}
