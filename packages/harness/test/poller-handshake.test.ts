import { afterAll, describe, expect, it } from "vitest";
import { createUser } from "@nats-io/nkeys";
import type { JwtAuth } from "@nats-io/transport-node";
import { spawnSync } from "node:child_process";
import { CredentialPoller, ProcessBackend, credpollBinary, freePort, harnessTeardown, monotonicMs, nativeCredsAuthenticator, sleep } from "../src/index.js";
import { parseCredpollLine } from "../src/credpoll.js";
import { handshake, handshakeTarget, type HandshakeError } from "../src/handshake.js";
import { PLAIN_CONFIG, dummyCreds } from "./helpers.js";

// The poller's default attempt is the bare connect handshake on worker threads; these pin that it
// reaches the same verdicts as a full nats.js connect, on the same clock as the caller.
const backend = new ProcessBackend();
afterAll(harnessTeardown);

const nkeyConfig = (publicKey: string) => `${PLAIN_CONFIG}authorization { users: [ { nkey: "${publicKey}" } ] }\n`;

// The Go engine is built by setup wherever Go is; a missing build there fails below rather than skipping.
const goOnPath = spawnSync("go", ["version"]).status === 0;
const layouts = [["handshake", 0, "node"], ["handshake", 2, "node"], ["nats.js", 0, "node"], ["nats.js", 2, "node"], ...(goOnPath ? [["handshake", 0, "go"] as const] : [])] as const;

async function verdicts(url: string, creds: string, client: "handshake" | "nats.js", threads: number, engine: "go" | "node" = "node") {
  const p = new CredentialPoller({ url, creds, client, threads, engine, concurrency: 2, maxAttempts: 10 }).start();
  await expect.poll(() => p.running, { timeout: 10_000 }).toBe(false);
  const r = await p.stop();
  expect(r.engine).toBe(engine);
  return { total: r.total, successes: r.successes, errors: Object.keys(r.errors), names: [...new Set(r.attempts.map((a) => a.errorName))] };
}

describe("the go engine (tools/credpoll)", () => {
  it("is built wherever Go is (infra/credpoll.sh install), and auto picks it for the native handshake only", () => {
    if (!goOnPath) return;
    expect(credpollBinary(), "run: bash infra/credpoll.sh install").toBeDefined();
    expect(new CredentialPoller({ url: "nats://127.0.0.1:1", creds: dummyCreds() }).engine).toBe("go");
    expect(new CredentialPoller({ url: "nats://127.0.0.1:1", creds: dummyCreds(), signer: "nats" }).engine).toBe("node");
    expect(new CredentialPoller({ url: "nats://127.0.0.1:1", creds: dummyCreds(), client: "nats.js" }).engine).toBe("node");
    expect(() => new CredentialPoller({ url: "nats://127.0.0.1:1", creds: dummyCreds(), client: "nats.js", engine: "go" })).toThrow(/native-signed handshake only/);
  });

  it("reads credpoll's lines onto monotonicMs()'s clock, with handshake.ts's error names", () => {
    expect(parseCredpollLine("1500000 2750000 ok")).toEqual({ startedAt: 1.5, endedAt: 2.75, ok: true });
    expect(parseCredpollLine("1000000 2000000 auth Authorization Violation")).toEqual({ startedAt: 1, endedAt: 2, ok: false, error: "Authorization Violation", errorName: "AuthorizationError" });
    expect(parseCredpollLine("1 2 timeout timeout")?.errorName).toBe("TimeoutError");
    expect(parseCredpollLine("ready")).toBeUndefined();
    expect(parseCredpollLine("1 2 maybe")).toBeUndefined();
  });

  it("stamps attempts on the caller's clock: each one lies between marks taken around the poll", async () => {
    if (!goOnPath) return;
    const port = await freePort();
    const before = monotonicMs();
    const p = new CredentialPoller({ url: `nats://127.0.0.1:${port}`, creds: dummyCreds(), engine: "go", concurrency: 2 }).start();
    await sleep(300);
    const r = await p.stop();
    const after = monotonicMs();
    expect(r.total).toBeGreaterThan(10);
    for (const a of r.attempts) {
      expect(a.startedAt).toBeGreaterThanOrEqual(before);
      expect(a.endedAt).toBeLessThanOrEqual(after);
      expect(a.endedAt).toBeGreaterThanOrEqual(a.startedAt);
    }
  });
});

describe("handshake target", () => {
  it("reads host and port from a nats URL, defaulting the port to 4222", () => {
    expect(handshakeTarget("nats://127.0.0.1:4333")).toEqual({ host: "127.0.0.1", port: 4333 });
    expect(handshakeTarget("nats://localhost")).toEqual({ host: "localhost", port: 4222 });
    expect(handshakeTarget("127.0.0.1:5000")).toEqual({ host: "127.0.0.1", port: 5000 });
    expect(handshakeTarget("nats://[::1]:4222")).toEqual({ host: "::1", port: 4222 });
  });
});

describe("handshake attempts agree with nats.js connects", () => {
  it("an nkey user gets in, a stranger is refused with Authorization Violation, on every client and thread layout", async () => {
    const user = createUser();
    const broker = await backend.start({ config: nkeyConfig(user.getPublicKey()), name: "hs-nkey" });
    try {
      for (const [client, threads, engine] of layouts) {
        expect(await verdicts(broker.url, dummyCreds(user), client, threads, engine), `${client} on ${threads} threads (${engine})`).toEqual({ total: 10, successes: 10, errors: [], names: [undefined] });
        const stranger = await verdicts(broker.url, dummyCreds(), client, threads, engine);
        expect(stranger.successes, `${client} on ${threads} threads (${engine})`).toBe(0);
        expect(stranger.errors.every((e) => /authorization violation/i.test(e))).toBe(true);
      }
      expect((await verdicts(broker.url, dummyCreds(), "handshake", 2)).names).toEqual(["AuthorizationError"]);
      if (goOnPath) expect((await verdicts(broker.url, dummyCreds(), "handshake", 0, "go")).names).toEqual(["AuthorizationError"]);
    } finally {
      await broker.dispose();
    }
  });

  it("a wrong signature over the server's nonce is refused: a success is a verified signature", async () => {
    const user = createUser();
    const broker = await backend.start({ config: nkeyConfig(user.getPublicKey()), name: "hs-sig" });
    try {
      const good = nativeCredsAuthenticator(dummyCreds(user));
      const imposter = nativeCredsAuthenticator(dummyCreds());
      const target = handshakeTarget(broker.url);
      await expect(handshake(target, good, { name: "t", timeoutMs: 2_000 })).resolves.toMatch(/^N[A-Z2-7]{55}$/); // the server that admitted it (its default name: its public key)
      // our public key, someone else's signature
      const forged = (nonce?: string) => ({ ...(imposter(nonce) as JwtAuth), nkey: (good(nonce) as JwtAuth).nkey });
      const err = (await handshake(target, forged, { name: "t", timeoutMs: 2_000 }).catch((e: HandshakeError) => e)) as HandshakeError;
      expect([err.name, err.message]).toEqual(["AuthorizationError", "Authorization Violation"]);
    } finally {
      await broker.dispose();
    }
  });

  it("a closed port is 'connection refused', a silent listener a timeout", async () => {
    const port = await freePort();
    expect(await verdicts(`nats://127.0.0.1:${port}`, dummyCreds(), "handshake", 2)).toEqual({ total: 10, successes: 0, errors: ["connection refused"], names: ["ConnectionError"] });
    if (goOnPath) expect(await verdicts(`nats://127.0.0.1:${port}`, dummyCreds(), "handshake", 0, "go")).toEqual({ total: 10, successes: 0, errors: ["connection refused"], names: ["ConnectionError"] });
    const { createServer } = await import("node:net");
    const silent = createServer(() => undefined);
    await new Promise<void>((res) => silent.listen(0, "127.0.0.1", res));
    try {
      const addr = silent.address() as { port: number };
      const err = (await handshake({ host: "127.0.0.1", port: addr.port }, nativeCredsAuthenticator(dummyCreds()), { name: "t", timeoutMs: 200 }).catch((e: Error) => e)) as Error;
      expect([err.name, err.message]).toEqual(["TimeoutError", "timeout"]);
    } finally {
      silent.close();
    }
  });
});

describe.each(goOnPath ? (["node", "go"] as const) : (["node"] as const))("threaded poller (%s engine)", (engine) => {
  it("spends maxAttempts exactly across threads and times every attempt on the caller's clock", async () => {
    const broker = await backend.start({ config: PLAIN_CONFIG, name: "hs-threads" });
    try {
      const before = monotonicMs();
      const p = new CredentialPoller({ url: broker.url, creds: dummyCreds(), threads: 3, concurrency: 7, maxAttempts: 500, engine }).start();
      await expect.poll(() => p.running, { timeout: 20_000 }).toBe(false);
      const r = await p.stop();
      const after = monotonicMs();
      expect(r.total).toBe(500);
      expect(r.successes).toBe(500);
      // a budget ended it: the report's window still runs to the stop() call, after every answer
      expect(r.stoppedAt).toBeGreaterThanOrEqual(Math.max(...r.attempts.map((a) => a.endedAt)));
      expect(r.attempts.every((a) => a.startedAt >= before && a.endedAt <= after && a.endedAt >= a.startedAt)).toBe(true);
    } finally {
      await broker.dispose();
    }
  });

  it("stop() waits for every thread's last attempt; waitForAttempt sees attempts from the threads", async () => {
    const broker = await backend.start({ config: PLAIN_CONFIG, name: "hs-stop" });
    try {
      const p = new CredentialPoller({ url: broker.url, creds: dummyCreds(), threads: 2, engine }).start();
      const first = await p.waitForAttempt((a) => a.ok);
      expect(first.ok).toBe(true);
      await sleep(300);
      const r = await p.stop();
      const n = r.total;
      await sleep(100);
      expect(p.attempts.length).toBe(n); // nothing arrives after stop() resolved
      expect(p.running).toBe(false);
      console.log(`handshake poller (${engine}) vs open server: ${r.total} attempts, ${Math.round(r.attemptsPerSecond)} attempts/s`);
    } finally {
      await broker.dispose();
    }
  });

  it.runIf(engine === "node")("is polling when start() returns, before any thread has loaded", async () => {
    const port = await freePort();
    const before = monotonicMs();
    const p = new CredentialPoller({ url: `nats://127.0.0.1:${port}`, creds: dummyCreds(), threads: 2, engine }).start();
    const r = await p.stop();
    expect(r.total).toBeGreaterThan(0);
    expect(r.attempts[0]?.startedAt).toBeGreaterThanOrEqual(before);
    expect(r.errors).toEqual({ "connection refused": r.total });
  });

  it("refuses bad options and unparsable creds before starting any thread", () => {
    expect(() => new CredentialPoller({ url: "nats://127.0.0.1:1", creds: dummyCreds(), threads: -1 })).toThrow(/threads/);
    expect(() => new CredentialPoller({ url: "nats://127.0.0.1:1", creds: dummyCreds(), concurrency: 0 })).toThrow(/concurrency/);
    expect(() => new CredentialPoller({ url: "nats://127.0.0.1:1", creds: "nope" })).toThrow(/unable to parse credentials/);
  });
});
