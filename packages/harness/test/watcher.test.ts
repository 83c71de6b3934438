import { afterAll, describe, expect, it } from "vitest";
import { ProcessBackend, SurvivorWatcher, harnessTeardown, maxReconnectGapMs, monotonicMs, type WatchEvent } from "../src/index.js";
import { PLAIN_CONFIG } from "./helpers.js";

const backend = new ProcessBackend();

afterAll(async () => {
  await harnessTeardown();
});

describe("SurvivorWatcher", () => {
  it("survives a reload without a disconnect", async () => {
    const broker = await backend.start({ config: PLAIN_CONFIG, name: "survivor-reload" });
    try {
      const watcher = await SurvivorWatcher.start({ url: broker.url });
      expect(await broker.reload()).toBe("reloaded");
      await watcher.connection.flush();
      const events = await watcher.stop();
      expect(events.filter((e) => e.type === "disconnect")).toHaveLength(0);
      expect(watcher.maxReconnectGapMs()).toBe(0);
    } finally {
      await broker.dispose();
    }
  });

  it("records the disconnect and reconnect around kill + restart", async () => {
    const broker = await backend.start({ config: PLAIN_CONFIG, name: "survivor-restart" });
    try {
      const watcher = await SurvivorWatcher.start({ url: broker.url });
      const t0 = monotonicMs();
      await broker.kill();
      await watcher.waitFor("disconnect", { since: t0 });
      await broker.restart();
      const back = await watcher.waitFor("reconnect", { since: t0 });
      await watcher.connection.flush();
      const events = await watcher.stop();
      expect(watcher.count("disconnect")).toBe(1);
      expect(watcher.count("reconnect")).toBe(1);
      expect(back.server).toBeTruthy();
      const gap = watcher.maxReconnectGapMs();
      console.log(`reconnect gap across kill+restart: ${gap.toFixed(1)} ms`);
      expect(gap).toBeGreaterThan(0);
      expect(events.at(-1)?.type).toBe("close");
    } finally {
      await broker.dispose();
    }
  });

  it("maxReconnectGapMs pairs each disconnect with the next reconnect and counts an open outage", () => {
    const ev = (type: WatchEvent["type"], at: number): WatchEvent => ({ type, at });
    expect(maxReconnectGapMs([])).toBe(0);
    expect(maxReconnectGapMs([ev("disconnect", 10), ev("reconnecting", 12), ev("reconnect", 15), ev("disconnect", 20), ev("reconnect", 40)])).toBe(20);
    expect(maxReconnectGapMs([ev("disconnect", 10), ev("reconnect", 15), ev("disconnect", 20)], 100)).toBe(80);
  });
});
