import { afterAll, describe, expect, it } from "vitest";
import { ContainerBackend, harnessTeardown, probeDocker } from "../src/index.js";
import { PLAIN_CONFIG, jsApi, withConnection } from "./helpers.js";

const docker = await probeDocker();
if (!docker.available) console.log(`container backend tests skipped: no Docker engine answered (${docker.reason ?? "unknown"})`);

afterAll(async () => {
  await harnessTeardown();
});

// Needs a Docker engine (and the nats image, pulled on first use); skipped where none answers.
describe.skipIf(!docker.available)("container backend", () => {
  const backend = new ContainerBackend({ startTimeoutMs: 60_000 });

  it("starts, serves, reloads, and keeps its store across kill + restart", { timeout: 180_000 }, async () => {
    const broker = await backend.start({ config: PLAIN_CONFIG, name: "container" });
    try {
      expect(broker.backend).toBe("container");
      expect(await broker.logs()).toContain("Server is ready");
      await withConnection(broker.url, async (nc) => {
        await jsApi(nc, "STREAM.CREATE.ORDERS", { name: "ORDERS", subjects: ["orders.>"], storage: "file" });
        await nc.request("orders.one", "first", { timeout: 5_000 });
      });
      expect(await broker.reload()).toBe("reloaded");
      expect(await broker.reload(PLAIN_CONFIG.replace("{{STORE_DIR}}", "{{STORE_DIR}}-elsewhere"))).toBe("failed");
      expect(await broker.reload(PLAIN_CONFIG)).toBe("reloaded");

      const port = broker.port;
      await broker.kill();
      expect(broker.running).toBe(false);
      await broker.restart();
      expect(broker.port).toBe(port);
      await withConnection(broker.url, async (nc) => {
        const info = await jsApi<{ state: { messages: number } }>(nc, "STREAM.INFO.ORDERS");
        expect(info.state.messages).toBe(1);
      });
      await broker.stop();
      expect(broker.running).toBe(false);
    } finally {
      await broker.dispose();
    }
  });
});
