import { afterAll, describe, expect, it } from "vitest";
import { createUser } from "@nats-io/nkeys";
import type { JwtAuth } from "@nats-io/transport-node";
import { CredentialPoller, ProcessBackend, freePort, harnessTeardown, monotonicMs, nativeCredsAuthenticator, sleep } from "../src/index.js";
import { handshake, handshakeTarget, type HandshakeError } from "../src/handshake.js";
import { PLAIN_CONFIG, dummyCreds } from "./helpers.js";

// The poller's default attempt is the bare connect handshake on worker threads; these pin that it
// reaches the same verdicts as a full nats.js connect, on the same clock as the caller.
const backend = new ProcessBackend();
afterAll(harnessTeardown);

const nkeyConfig = (publicKey: string) => `${PLAIN_CONFIG}authorization { users: [ { nkey: "${publicKey}" } ] }\n`;

async function verdicts(url: string, creds: string, client: "handshake" | "nats.js", threads: number) {
  const p = new CredentialPoller({ url, creds, client, threads, concurrency: 2, maxAttempts: 10 }).start();
  await expect.poll(() => p.running, { timeout: 10_000 }).toBe(false);
  const r = await p.stop();
  return { total: r.total, successes: r.successes, errors: Object.keys(r.errors), names: [...new Set(r.attempts.map((a) => a.errorName))] };
}

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
      for (const [client, threads] of [["handshake", 0], ["handshake", 2], ["nats.js", 0], ["nats.js", 2]] as const) {
        expect(await verdicts(broker.url, dummyCreds(user), client, threads), `${client} on ${threads} threads`).toEqual({ total: 10, successes: 10, errors: [], names: [undefined] });
        const stranger = await verdicts(broker.url, dummyCreds(), client, threads);
        expect(stranger.successes, `${client} on ${threads} threads`).toBe(0);
        expect(stranger.errors.every((e) => /authorization violation/i.test(e))).toBe(true);
      }
      expect((await verdicts(broker.url, dummyCreds(), "handshake", 2)).names).toEqual(["AuthorizationError"]);
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
      await expect(handshake(target, good, { name: "t", timeoutMs: 2_000 })).resolves.toBeUndefined();
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

describe("threaded poller", () => {
  it("spends maxAttempts exactly across threads and times every attempt on the caller's clock", async () => {
    const broker = await backend.start({ config: PLAIN_CONFIG, name: "hs-threads" });
    try {
      const before = monotonicMs();
      const p = new CredentialPoller({ url: broker.url, creds: dummyCreds(), threads: 3, concurrency: 7, maxAttempts: 500 }).start();
      await expect.poll(() => p.running, { timeout: 20_000 }).toBe(false);
      const r = await p.stop();
      const after = monotonicMs();
      expect(r.total).toBe(500);
      expect(r.successes).toBe(500);
      expect(r.attempts.every((a) => a.startedAt >= before && a.endedAt <= after && a.endedAt >= a.startedAt)).toBe(true);
    } finally {
      await broker.dispose();
    }
  });

  it("stop() waits for every thread's last attempt; waitForAttempt sees attempts from the threads", async () => {
    const broker = await backend.start({ config: PLAIN_CONFIG, name: "hs-stop" });
    try {
      const p = new CredentialPoller({ url: broker.url, creds: dummyCreds(), threads: 2 }).start();
      const first = await p.waitForAttempt((a) => a.ok);
      expect(first.ok).toBe(true);
      await sleep(300);
      const r = await p.stop();
      const n = r.total;
      await sleep(100);
      expect(p.attempts.length).toBe(n); // nothing arrives after stop() resolved
      expect(p.running).toBe(false);
      console.log(`threaded handshake poller vs open server: ${r.total} attempts, ${Math.round(r.attemptsPerSecond)} attempts/s`);
    } finally {
      await broker.dispose();
    }
  });

  it("is polling when start() returns, before any thread has loaded", async () => {
    const port = await freePort();
    const before = monotonicMs();
    const p = new CredentialPoller({ url: `nats://127.0.0.1:${port}`, creds: dummyCreds(), threads: 2 }).start();
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
