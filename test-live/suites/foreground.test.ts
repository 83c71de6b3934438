import { afterAll, afterEach, describe, expect, it } from "vitest";
import { harnessTeardown, spawnCotal } from "@cotal/harness";
import { parseJson } from "../fixtures/live-root.js";
import type { StatusReport } from "@cotal/core";
import { connects, credsText, disposeLiveRoots, trackedRoot } from "../fixtures/tenants.js";

afterEach(disposeLiveRoots);
afterAll(harnessTeardown);

describe("cotal up in the foreground", () => {
  it("serves until Ctrl-C, then stops the broker and clears its runtime record", async () => {
    const r = await trackedRoot();
    const child = spawnCotal(["up", "--port", String(r.port)], { root: r.root });
    let out = "";
    child.stdout?.on("data", (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((res) => child.on("exit", (c) => res(c)));
    const deadline = Date.now() + 20_000;
    while (!out.includes("running in the foreground") && Date.now() < deadline) await new Promise((res) => setTimeout(res, 50));
    expect(out).toMatch(/running in the foreground/);
    const running = parseJson<StatusReport>(await r.cotal(["status", "--json"]));
    expect(running.broker.running).toBe(true);
    expect(running.broker.detached).toBe(false);
    expect(await connects(`nats://127.0.0.1:${r.port}`, await credsText(r, "default"))).toBe(true);
    child.kill("SIGINT");
    expect(await exited).toBe(0);
    const after = parseJson<StatusReport>(await r.cotal(["status", "--json"]));
    expect(after.broker.running).toBe(false);
    expect(after.broker.staleRuntime).toBe(false);
  });
});
