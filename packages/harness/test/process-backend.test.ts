import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { HarnessError, ProcessBackend, harnessTeardown, isHarnessError, tempRoot, type Broker } from "../src/index.js";
import { PLAIN_CONFIG, jsApi, withConnection } from "./helpers.js";

const backend = new ProcessBackend();

afterAll(async () => {
  await harnessTeardown();
});

describe("process backend", () => {
  it("starts a server that serves publish/subscribe and logs readiness", async () => {
    const broker = await backend.start({ config: PLAIN_CONFIG, name: "pubsub" });
    try {
      expect(broker.backend).toBe("process");
      expect(broker.url).toBe(`nats://127.0.0.1:${broker.port}`);
      expect(broker.running).toBe(true);
      expect(broker.pid).toBeGreaterThan(0);
      await withConnection(broker.url, async (nc) => {
        const sub = nc.subscribe("harness.hello", { max: 1 });
        nc.publish("harness.hello", "hi");
        for await (const m of sub) expect(m.string()).toBe("hi");
      });
      expect(await broker.logs()).toContain("Server is ready");
      const line = await broker.waitForLog(/Listening for client connections/);
      expect(line).toContain(String(broker.port));
    } finally {
      await broker.dispose();
    }
    expect(broker.running).toBe(false);
  });

  it("reload: an unchanged config reloads, a refused change fails and the server keeps serving", async () => {
    const broker = await backend.start({ config: PLAIN_CONFIG, name: "reload" });
    try {
      expect(await broker.reload()).toBe("reloaded");
      expect(await broker.reload(PLAIN_CONFIG)).toBe("reloaded");

      // 2.9.10 refuses to move the JetStream store on reload ("config reload not supported for
      // jetstream storage directory"), as it refuses a listen port change.
      const moved = PLAIN_CONFIG.replace("{{STORE_DIR}}", "{{STORE_DIR}}-elsewhere");
      const before = await broker.logOffset();
      expect(await broker.reload(moved)).toBe("failed");
      expect(await broker.logsSince(before)).toMatch(/Failed to reload server configuration: .*storage directory/);

      // A value that parses but has the wrong type fails too.
      expect(await broker.reload(`${PLAIN_CONFIG}max_payload: "lots"\n`)).toBe("failed");

      expect(broker.running).toBe(true);
      await withConnection(broker.url, async (nc) => {
        await nc.flush();
      });
      // Only log after the SIGHUP counts: back on a valid config, the old failures do not matter.
      expect(await broker.reload(PLAIN_CONFIG)).toBe("reloaded");
    } finally {
      await broker.dispose();
    }
  });

  it("kill() then restart() keeps the JetStream store and the port", async () => {
    const broker = await backend.start({ config: PLAIN_CONFIG, name: "restart" });
    try {
      await withConnection(broker.url, async (nc) => {
        await jsApi(nc, "STREAM.CREATE.ORDERS", { name: "ORDERS", subjects: ["orders.>"], storage: "file" });
        const ack = await nc.request("orders.one", "first", { timeout: 5_000 });
        expect(ack.json<{ seq: number }>().seq).toBe(1);
      });
      const port = broker.port;
      const pid = broker.pid;
      await broker.kill();
      expect(broker.running).toBe(false);
      expect(broker.pid).toBeUndefined();
      await expect(broker.reload()).rejects.toMatchObject({ code: "invalid-state" });

      await broker.restart();
      expect(broker.running).toBe(true);
      expect(broker.port).toBe(port);
      expect(broker.pid).not.toBe(pid);
      await withConnection(broker.url, async (nc) => {
        const info = await jsApi<{ state: { messages: number } }>(nc, "STREAM.INFO.ORDERS");
        expect(info.state.messages).toBe(1);
      });
      // The log spans both runs.
      const logs = await broker.logs();
      expect(logs.match(/Server is ready/g)?.length).toBe(2);
    } finally {
      await broker.dispose();
    }
  });

  it("stop() is graceful and restart() after it works; signal() reaches the process", async () => {
    const broker = await backend.start({ config: PLAIN_CONFIG, name: "stop" });
    try {
      await broker.stop();
      expect(broker.running).toBe(false);
      expect(await broker.logs()).toContain("Server Exiting");
      await broker.restart();
      const offset = await broker.logOffset();
      await broker.signal("SIGTERM");
      await broker.waitForLog(/Server Exiting/, { since: offset });
      await expect.poll(() => broker.running, { timeout: 30_000 }).toBe(false);
    } finally {
      await broker.dispose();
    }
  });

  it("waitForLog only sees lines after `since` and times out with a typed error", async () => {
    const broker = await backend.start({ config: PLAIN_CONFIG, name: "since" });
    try {
      const offset = await broker.logOffset();
      const err = await broker.waitForLog(/Server is ready/, { since: offset, timeoutMs: 200 }).catch((e: unknown) => e);
      expect(isHarnessError(err, "timeout")).toBe(true);
      expect((err as HarnessError).logTail).toBeUndefined(); // nothing was written after the offset
    } finally {
      await broker.dispose();
    }
  });

  it("a config nats-server rejects fails start with code exited and the reason", async () => {
    const err = await backend.start({ config: "listen: 127.0.0.1:{{PORT}}\nthis is { not valid\n" }).catch((e: unknown) => e);
    expect(isHarnessError(err, "exited")).toBe(true);
    expect((err as HarnessError).message).toMatch(/exited during start/);
  });

  it("a port that is taken gives port-unavailable when the caller chose it", async () => {
    const first = await backend.start({ config: PLAIN_CONFIG });
    try {
      const err = await backend.start({ config: PLAIN_CONFIG, port: first.port }).catch((e: unknown) => e);
      expect(isHarnessError(err, "port-unavailable")).toBe(true);
    } finally {
      await first.dispose();
    }
  });

  it("{{HTTP_PORT}} gets its own port and unknown placeholders are refused", async () => {
    const broker = await backend.start({ config: `${PLAIN_CONFIG}http: 127.0.0.1:{{HTTP_PORT}}\n` });
    try {
      expect(broker.httpPort).toBeGreaterThan(0);
      expect(broker.httpPort).not.toBe(broker.port);
      const res = await fetch(`http://127.0.0.1:${broker.httpPort}/healthz`);
      expect(res.ok).toBe(true);
    } finally {
      await broker.dispose();
    }
    await expect(backend.start({ config: "listen: {{NOPE}}\n" })).rejects.toMatchObject({ code: "invalid-argument" });
  });

  it("a server that never gets ready is start-timeout, carrying what it printed", async () => {
    const dir = await tempRoot("fake-nats-");
    const fake = join(dir.path, "nats-server");
    // Ignores its arguments, says something, and never becomes ready.
    await writeFile(fake, "#!/bin/sh\necho 'fake server: pretending to start' >&2\nexec sleep 30\n", { mode: 0o755 });
    const err = await new ProcessBackend({ binary: fake, startTimeoutMs: 300 }).start({ config: PLAIN_CONFIG }).catch((e: unknown) => e);
    expect(isHarnessError(err, "start-timeout")).toBe(true);
    expect((err as HarnessError).logTail).toContain("pretending to start");
  });

  it("waitForLog keeps waiting across a restart, but fails fast when the server is down for good", async () => {
    const broker = await backend.start({ config: PLAIN_CONFIG, name: "across" });
    try {
      await broker.kill();
      const offset = await broker.logOffset();
      const down = await broker.waitForLog(/Server is ready/, { since: offset, timeoutMs: 5_000 }).catch((e: unknown) => e);
      expect(isHarnessError(down, "exited")).toBe(true);
      const restarting = broker.restart();
      const ready = broker.waitForLog(/Server is ready/, { since: offset });
      await restarting;
      expect(await ready).toContain("Server is ready");
    } finally {
      await broker.dispose();
    }
  });

  it("a missing binary is nats-server-missing naming the path (the core's refusal)", async () => {
    const err = await new ProcessBackend({ binary: "/nonexistent/nats-server" }).start({ config: PLAIN_CONFIG }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: "nats-server-missing", details: { path: "/nonexistent/nats-server" } });
  });

  it("brokers leaked by a test are reached by harnessTeardown()", async () => {
    const leaked: Broker = await backend.start({ config: PLAIN_CONFIG, name: "leaked" });
    expect(leaked.running).toBe(true);
    await harnessTeardown();
    expect(leaked.running).toBe(false);
  });
});
