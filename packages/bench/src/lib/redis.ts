import { spawn } from "node:child_process";
import { freePort, tempRoot } from "@cotal/harness";
import { onCleanup } from "./cleanup.js";

/** A throwaway redis-server on a free loopback port, no persistence; stopped by the bench's clean-up. */
export async function startRedis(): Promise<string> {
  const dir = await tempRoot("cotal-bench-redis-");
  onCleanup(`remove ${dir.path}`, () => dir.cleanup());
  const port = await freePort();
  const child = spawn("redis-server", ["--bind", "127.0.0.1", "--port", String(port), "--dir", dir.path, "--save", "", "--appendonly", "no", "--maxmemory-policy", "noeviction"], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  onCleanup(`stop redis-server on port ${port}`, async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGTERM");
      await exited;
    }
  });
  await new Promise<void>((resolve, reject) => {
    let out = "";
    const timer = setTimeout(() => reject(new Error(`redis-server did not start: ${out}`)), 10_000);
    child.stdout?.on("data", (c: Buffer) => {
      out += c.toString();
      if (out.includes("Ready to accept connections")) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once("error", (e) => {
      clearTimeout(timer);
      reject(e);
    });
  });
  return `redis://127.0.0.1:${port}`;
}
