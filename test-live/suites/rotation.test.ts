import { existsSync, readdirSync, readFileSync } from "node:fs";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { harnessTeardown } from "@cotal/harness";
import { loadBrokerTrust } from "@cotal/core/root";
import { decodeJwt, inboxPrefixOf, parseCreds } from "@cotal/core/trust";
import { connect, credsAuthenticator } from "@nats-io/transport-node";
import { FAILPOINT_EXIT, disposeLiveRoots, statusOf, upRoot } from "../fixtures/tenants.js";

// `up --rotate-sys` is journaled with its successor staged first, so a rotation cut anywhere is
// finished by re-running it, and no verb boots a root whose $SYS creds are half rotated.

afterEach(disposeLiveRoots);
afterAll(harnessTeardown);

async function observerConnects(url: string, creds: string): Promise<void> {
  const nc = await connect({ servers: url, authenticator: credsAuthenticator(new TextEncoder().encode(creds)), inboxPrefix: inboxPrefixOf(creds), reconnect: false, timeout: 5_000 });
  await nc.close();
}

describe("a rotation cut short is finished by re-running it", () => {
  it.each(["rotate-journaled", "rotate-seed-written", "rotate-applied"])("killed at %s: up refuses naming the rotation; the re-run finishes it; every observer verifies", async (point) => {
    const { r, up } = await upRoot();
    expect((await r.cotal(["space", "add", "beta", "gamma"])).code).toBe(0);
    const oldSys = loadBrokerTrust(r.layout).system.publicKey;
    expect((await r.cotal(["down"])).code).toBe(0);
    const cut = await r.cotal(["up", "--rotate-sys", "--detach"], { env: { COTAL_FAILPOINT: `${point}:exit` } });
    expect(cut.code, cut.stderr).toBe(FAILPOINT_EXIT);
    const plain = await r.cotal(["up", "--detach"]);
    expect(plain.code, plain.stderr).toBe(3);
    expect(plain.stderr).toMatch(/\[journal-blocked\]/);
    expect(plain.stderr).toMatch(/next: cotal (--root \S+ )?up --rotate-sys/);
    const again = await r.cotal(["up", "--rotate-sys", "--detach"]);
    expect(again.code, again.stderr).toBe(0);
    const broker = loadBrokerTrust(r.layout);
    expect(broker.system.publicKey).not.toBe(oldSys);
    expect(broker.generation).toBe(2);
    expect(existsSync(r.layout.successorTrustFile)).toBe(false);
    expect(readdirSync(r.layout.brokerSecretsDir).filter((f) => f.endsWith(".tmp"))).toEqual([]);
    for (const s of ["alpha", "beta", "gamma"]) {
      const creds = readFileSync(r.layout.sysCredsFile(s, "observer"), "utf8");
      expect(decodeJwt(parseCreds(creds).jwt).nats.issuer_account).toBe(broker.system.publicKey);
      await observerConnects(up.url, creds);
    }
    const st = await statusOf(r);
    expect(st.state).toBe("clean");
    expect(st.journal).toBeNull();
  });
});
