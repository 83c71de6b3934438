import { describe, expect, it, vi } from "vitest";
import { serveUntilSignal } from "../src/serve.js";

// The foreground server verbs (dashboard, metrics) stay up until SIGINT/SIGTERM, then close; the
// signals are emitted on `process` here, which runs the listeners without signalling the runner.

describe("serveUntilSignal", () => {
  it.each([["SIGINT"], ["SIGTERM"]] as const)("%s closes the server once and removes its listeners", async (sig) => {
    const before = [process.listenerCount("SIGINT"), process.listenerCount("SIGTERM")];
    const close = vi.fn(async () => {});
    const served = serveUntilSignal("metrics", { close });
    expect(close).not.toHaveBeenCalled();
    process.emit(sig);
    await served;
    expect(close).toHaveBeenCalledTimes(1);
    expect([process.listenerCount("SIGINT"), process.listenerCount("SIGTERM")]).toEqual(before);
  });

  it("a failing close is reported on stderr, not thrown", async () => {
    let stderr = "";
    const spy = vi.spyOn(process.stderr, "write").mockImplementation((s: string | Uint8Array) => ((stderr += String(s)), true));
    try {
      const served = serveUntilSignal("dashboard", { close: async () => Promise.reject(new Error("socket stuck")) });
      process.emit("SIGTERM");
      await expect(served).resolves.toBeUndefined();
    } finally {
      spy.mockRestore();
    }
    expect(stderr).toBe("cotal dashboard: closing: socket stuck\n");
  });
});
