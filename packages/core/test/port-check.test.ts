import { createServer, type Server } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { describeError, isCotalError } from "../src/entries/errors.js";
import { freePort } from "../src/broker/free-port.js";
import { assertPortFree, portBindable, portHolder } from "../src/broker/port-check.js";

const held: Server[] = [];
afterEach(() => {
  for (const s of held.splice(0)) s.close();
});
const hold = (port: number) =>
  new Promise<void>((resolve) => {
    const srv = createServer();
    held.push(srv);
    srv.listen({ host: "127.0.0.1", port, exclusive: true }, () => resolve());
  });

describe("up's listener check", () => {
  it("a free port is bindable and passes; a held one is not", async () => {
    const port = await freePort();
    expect(await portBindable("127.0.0.1", port)).toBe(true);
    await expect(assertPortFree("127.0.0.1", port)).resolves.toBeUndefined();
    await hold(port);
    expect(await portBindable("127.0.0.1", port)).toBe(false);
  });

  it("refuses a held port with port-in-use naming its holder, and re-runs the command on a free port", async () => {
    const port = await freePort();
    await hold(port);
    expect(portHolder(port)).toBe(`node pid ${process.pid}`);
    const err = await assertPortFree("127.0.0.1", port).then(() => undefined, (e: unknown) => e);
    if (!isCotalError(err)) throw new Error("expected a refusal");
    expect(err.code).toBe("port-in-use");
    expect(err.message).toBe(`127.0.0.1:${port} is already in use by node pid ${process.pid}; nothing was started`);
    const next = describeError(err, { argv: ["--root", "/r", "up", "--detach", "--port", String(port)] }).next ?? "";
    const m = /^cotal --root \/r up --detach --port (\d+) {3}# /.exec(next);
    expect(m, next).not.toBeNull();
    expect(await portBindable("127.0.0.1", Number(m?.[1]))).toBe(true);
  });
});
