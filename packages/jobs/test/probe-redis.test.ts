import { createServer, type Server, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { isCotalError } from "@cotal/core";
import { probeRedis } from "../src/connection.js";

// A stopped (SIGSTOP) Redis accepts the TCP connect (the kernel does) and answers nothing: ioredis's
// connectTimeout does not cover the ready check or the PING, so probeRedis bounds the whole probe
// (docs/refusals.md "Bounded time"). A listener that never replies stands in for it.
let server: Server | undefined;
const sockets: Socket[] = [];
afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
  server = undefined;
});

async function silentListener(): Promise<number> {
  server = createServer((s) => sockets.push(s));
  await new Promise<void>((r) => server?.listen(0, "127.0.0.1", () => r()));
  const addr = server.address();
  if (!addr || typeof addr === "string") throw new Error("no port");
  return addr.port;
}

describe("probeRedis against a Redis that accepts and never answers", () => {
  it("refuses redis-unreachable within its bound, saying it got no answer", async () => {
    const port = await silentListener();
    const t0 = Date.now();
    const err = await probeRedis(`redis://127.0.0.1:${port}`, 400).then(() => undefined, (e: unknown) => e);
    const ms = Date.now() - t0;
    expect(isCotalError(err, "redis-unreachable")).toBe(true);
    expect((err as Error).message).toContain("no answer within 400 ms");
    expect(ms).toBeGreaterThanOrEqual(350);
    expect(ms).toBeLessThan(2_000);
    expect(sockets.length).toBe(1); // it did connect: the bound is past the connect
  });
});
