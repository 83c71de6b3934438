import { afterAll, describe, expect, it } from "vitest";
import { createUser } from "@nats-io/nkeys";
import { credsAuthenticator } from "@nats-io/transport-node";
import { CredentialPoller, ProcessBackend, freePort, harnessTeardown, monotonicMs, nativeCredsAuthenticator, sleep } from "../src/index.js";
import { PLAIN_CONFIG, dummyCreds } from "./helpers.js";

const backend = new ProcessBackend();

afterAll(async () => {
  await harnessTeardown();
});

function rate(n: number, ms: number): string {
  return `${Math.round((n * 1000) / Math.max(ms, 1))} attempts/s`;
}

describe("nativeCredsAuthenticator", () => {
  it("answers exactly what nats.js credsAuthenticator answers", () => {
    const creds = dummyCreds();
    const ours = nativeCredsAuthenticator(creds);
    const theirs = credsAuthenticator(new TextEncoder().encode(creds));
    for (const nonce of ["bm9uY2U", "Zm9vYmFyLXJhbmRvbS1ub25jZQ", undefined]) {
      expect(ours(nonce)).toEqual(theirs(nonce));
    }
  });

  it("refuses creds text it cannot parse", () => {
    expect(() => nativeCredsAuthenticator("not a creds file")).toThrow(/unable to parse credentials/);
  });
});

describe("CredentialPoller", () => {
  it("records successes against an open server", async () => {
    const broker = await backend.start({ config: PLAIN_CONFIG, name: "poll-open" });
    try {
      // Serial and with nats.js' own signer too, for comparison in the output.
      for (const [signer, concurrency] of [["nats", 1], ["native", 1]] as const) {
        const p = new CredentialPoller({ url: broker.url, creds: dummyCreds(), concurrency, signer }).start();
        await sleep(300);
        const r = await p.stop();
        console.log(`poller vs open server (signer ${signer}, concurrency ${concurrency}): ${r.total} attempts, ${r.attemptsPerSecond.toFixed(0)} attempts/s`);
        expect(r.successes).toBe(r.total);
      }
      const poller = new CredentialPoller({ url: broker.url, creds: dummyCreds(), concurrency: 4 }).start();
      await poller.waitForAttempt((a) => a.ok);
      const t0 = monotonicMs();
      await sleep(1_000);
      const t1 = monotonicMs();
      const report = await poller.stop();
      console.log(`poller vs open server (signer native, concurrency 4): ${report.total} attempts, ${report.successes} ok, ${report.attemptsPerSecond.toFixed(0)} attempts/s`);
      expect(report.successes).toBeGreaterThan(0);
      expect(report.failures).toBe(0);
      expect(report.successes + report.failures).toBe(report.total);
      expect(report.successesBetween(t0, t1)).toBeGreaterThan(0);
      expect(report.successesBetween(t0, t1)).toBeLessThanOrEqual(report.successesBetween(t0, t1, "overlapping"));
      expect(report.firstSuccessAt).toBeLessThanOrEqual(report.lastSuccessAt ?? 0);
      expect(report.attempts.every((a) => a.endedAt >= a.startedAt)).toBe(true);
      expect(poller.running).toBe(false);
    } finally {
      await broker.dispose();
    }
  });

  it("records failures with the error text against a closed port", async () => {
    const port = await freePort();
    const poller = new CredentialPoller({ url: `nats://127.0.0.1:${port}`, creds: dummyCreds(), concurrency: 2 }).start();
    await sleep(300);
    const report = await poller.stop();
    console.log(`poller vs closed port: ${report.total} attempts, ${rate(report.total, report.durationMs)}, errors ${JSON.stringify(report.errors)}`);
    expect(report.total).toBeGreaterThan(0);
    expect(report.successes).toBe(0);
    expect(report.failures).toBe(report.total);
    expect(report.firstSuccessAt).toBeUndefined();
    expect(report.attempts[0]?.error).toBeTruthy();
  });

  it("captures Authorization Violation when the server refuses the creds", async () => {
    const broker = await backend.start({ config: `${PLAIN_CONFIG}authorization { token: "s3cret" }\n`, name: "poll-auth" });
    try {
      const poller = new CredentialPoller({ url: broker.url, creds: dummyCreds(), concurrency: 2 }).start();
      const refused = await poller.waitForAttempt((a) => !a.ok);
      await sleep(200);
      const report = await poller.stop();
      console.log(`poller vs refusing server: ${report.total} attempts, ${report.attemptsPerSecond.toFixed(0)} attempts/s, errors ${JSON.stringify(report.errors)}`);
      expect(refused.error).toMatch(/Authorization Violation/i);
      expect(report.successes).toBe(0);
      expect(Object.keys(report.errors).some((e) => /Authorization Violation/i.test(e))).toBe(true);
    } finally {
      await broker.dispose();
    }
  });

  it("signs the server's nonce correctly: an nkey user gets in, a stranger does not", async () => {
    const user = createUser();
    const broker = await backend.start({ config: `${PLAIN_CONFIG}authorization { users: [ { nkey: "${user.getPublicKey()}" } ] }\n`, name: "poll-nkey" });
    try {
      for (const signer of ["native", "nats"] as const) {
        const good = new CredentialPoller({ url: broker.url, creds: dummyCreds(user), signer, concurrency: 1, maxAttempts: 20 }).start();
        await expect.poll(() => good.running, { timeout: 30_000 }).toBe(false);
        const ok = await good.stop();
        expect(ok.successes).toBe(20);
      }
      const stranger = new CredentialPoller({ url: broker.url, creds: dummyCreds(), concurrency: 1, maxAttempts: 5 }).start();
      await expect.poll(() => stranger.running, { timeout: 30_000 }).toBe(false);
      const bad = await stranger.stop();
      expect(bad.successes).toBe(0);
      expect(bad.attempts.every((a) => /Authorization Violation/i.test(a.error ?? ""))).toBe(true);
    } finally {
      await broker.dispose();
    }
  });

  it("sees a server go away and come back, attempt by attempt", async () => {
    const broker = await backend.start({ config: PLAIN_CONFIG, name: "poll-flap" });
    try {
      const poller = new CredentialPoller({ url: broker.url, creds: dummyCreds(), intervalMs: 1, concurrency: 1 }).start();
      await poller.waitForAttempt((a) => a.ok);
      await broker.kill();
      const down = monotonicMs();
      await poller.waitForAttempt((a) => !a.ok && a.startedAt >= down);
      const restarting = monotonicMs();
      await broker.restart();
      const up = monotonicMs();
      await poller.waitForAttempt((a) => a.ok && a.startedAt >= up);
      const report = await poller.stop();
      // Nothing can succeed between the kill and the moment restart() began.
      expect(report.successesBetween(down, restarting, "overlapping")).toBe(0);
      expect(report.failuresBetween(down, restarting)).toBeGreaterThan(0);
      expect(report.successesBetween(up, report.lastSuccessAt ?? up, "overlapping")).toBeGreaterThan(0);
    } finally {
      await broker.dispose();
    }
  });

  it("stops by itself at maxAttempts", async () => {
    const port = await freePort();
    const poller = new CredentialPoller({ url: `nats://127.0.0.1:${port}`, creds: dummyCreds(), concurrency: 3, maxAttempts: 25 }).start();
    await expect.poll(() => poller.running, { timeout: 30_000 }).toBe(false);
    const report = await poller.stop();
    expect(report.total).toBe(25);
  });
});
