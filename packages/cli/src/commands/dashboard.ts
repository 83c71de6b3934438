import type { Command } from "commander";
import { guardsOf, rootOf } from "../context.js";
import { out } from "../output.js";
import { portFlag, serveUntilSignal } from "../serve.js";

interface DashboardFlags {
  port: number;
  host: string;
  allowRemote?: boolean;
}

export function registerDashboard(program: Command): void {
  program
    .command("dashboard")
    .description("serve the tenant page and a read-only Bull Board for this root's queues in the browser (loopback only by default; every request but GET/HEAD is refused)")
    .option("--port <port>", "port to listen on (0 = any free port)", portFlag("dashboard", 8090), 8090)
    .option("--host <host>", "address to listen on; a non-loopback one needs --allow-remote", "127.0.0.1")
    .option("--allow-remote", "bind a non-loopback --host (the dashboard has no login: anyone who reaches it reads every tenant and job)")
    .action(async (flags: DashboardFlags, cmd: Command) => {
      const { startDashboard } = await import("@cotal/dashboard"); // lazy: only this verb loads express and Bull Board
      const { redisUrlFrom } = await import("@cotal/jobs");
      const d = await startDashboard({ root: rootOf(cmd), redisUrl: redisUrlFrom(process.env), host: flags.host, port: flags.port, allowRemote: flags.allowRemote === true, guards: guardsOf(cmd) });
      out(`cotal dashboard: serving ${d.url}/tenants (tenants, JSON at ${d.url}/api/tenants) and ${d.url}/queues (Bull Board); Ctrl-C stops`);
      await serveUntilSignal("dashboard", d);
    });
}
