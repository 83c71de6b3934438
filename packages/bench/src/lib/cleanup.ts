/**
 * Every broker, Redis and temp dir a bench starts is registered here and torn down in reverse order,
 * from the script's finally and from SIGINT/SIGTERM (so a Ctrl-C does not leak a detached broker).
 */
type Task = { what: string; run: () => Promise<unknown> | unknown };

const tasks: Task[] = [];
let installed = false;

export function onCleanup(what: string, run: () => Promise<unknown> | unknown): void {
  tasks.push({ what, run });
  if (!installed) {
    installed = true;
    for (const sig of ["SIGINT", "SIGTERM"] as const) {
      process.once(sig, () => {
        console.error(`\n${sig}: cleaning up`);
        void runCleanup().finally(() => process.exit(130));
      });
    }
  }
}

export async function runCleanup(): Promise<void> {
  while (tasks.length > 0) {
    const t = tasks.pop() as Task;
    try {
      await t.run();
    } catch (err) {
      console.error(`cleanup: ${t.what} failed: ${(err as Error).message}`);
    }
  }
}

/** Runs `main`, then every registered clean-up; exits non-zero on failure. */
export async function runBench(main: () => Promise<void>): Promise<void> {
  try {
    await main();
  } catch (err) {
    console.error(err);
    process.exitCode = 1;
  } finally {
    await runCleanup();
  }
}
