import { existsSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { harnessTeardown } from "@cotal/harness";
import { refusedWith, runPrinted } from "../fixtures/printed.js";
import { connects, credsText, disposeLiveRoots, statusOf, trackedRoot, upRoot } from "../fixtures/tenants.js";

// `up` and its listener (issue #31): a taken port is refused before anything is created or started,
// naming who holds it; a running root is never told to move by a different --port.

afterEach(disposeLiveRoots);
afterAll(harnessTeardown);

function hold(port: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen({ host: "127.0.0.1", port, exclusive: true }, () => resolve(srv));
  });
}

describe("up's listener", () => {
  it("a taken port: port-in-use naming its holder, no root created, no server started; the printed line, run verbatim, starts on a free port", async () => {
    const r = await trackedRoot("cotal-port-");
    const held = await hold(r.port);
    try {
      const res = await r.cotal(["up", "--detach", "--port", String(r.port), "--space", "alpha"]);
      const next = refusedWith(res, "port-in-use", 6);
      expect(res.stderr).toContain(`127.0.0.1:${r.port} is already in use by node pid ${process.pid}`);
      expect(res.stderr).not.toMatch(/\[INF\]|\[FTL\]/); // the refusal, not the server's log
      expect(existsSync(r.root), "a refused up creates no root").toBe(false);
      expect(next).toMatch(new RegExp(`^cotal --root \\S+ up --detach --port (\\d+) --space alpha {3}#`));
      const ran = await runPrinted(next);
      expect(ran.code, ran.stderr).toBe(0);
      const st = await statusOf(r);
      expect(st.state).toBe("clean");
      expect(st.broker.url).not.toContain(`:${r.port}`);
      expect(await connects(st.broker.url as string, await credsText(r, "alpha"))).toBe(true);
    } finally {
      held.close();
    }
  });

  it("a running root: another --port is refused broker-running naming the one it runs on; the printed line runs on the running broker; control: the same port is fine", async () => {
    const { r } = await upRoot();
    const res = await r.cotal(["up", "--detach", "--port", String(r.port + 1)]);
    const next = refusedWith(res, "broker-running", 6);
    expect(res.stderr).toContain(`runs on port ${r.port}`);
    const ran = await runPrinted(next);
    expect(ran.code, ran.stderr).toBe(0);
    expect(ran.stdout).toContain(`nats://127.0.0.1:${r.port}`);
    expect((await r.cotal(["up", "--detach", "--port", String(r.port)])).code).toBe(0);
  });
});
