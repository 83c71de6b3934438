import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { jetstreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { freePort, harnessTeardown, selectBackend, type Broker } from "@cotal/harness";
import { serverConfig } from "@cotal/core/broker";
import { createAccountTrust, createBrokerTrust, mintSystemUserCreds, mintUserCreds, type AccountTrust } from "@cotal/core/trust";
import { connectCreds, refusal } from "../fixtures/nats.js";

// Trust minted with node:crypto, rendered by the pure renderer, accepted by a real nats-server.
describe("minted trust on a real nats-server", () => {
  let broker: Broker;
  let alpha: AccountTrust;
  let beta: AccountTrust;
  let authority: AccountTrust;
  let trust: ReturnType<typeof createBrokerTrust>;

  beforeAll(async () => {
    trust = createBrokerTrust({ retainSystemSigningSeed: true });
    authority = createAccountTrust(trust.operator, "authority", { kind: "authority" });
    alpha = createAccountTrust(trust.operator, "alpha", { kind: "space" });
    beta = createAccountTrust(trust.operator, "beta", { kind: "space" });
    const port = await freePort();
    const conf = serverConfig(trust, [beta, alpha], {
      host: "127.0.0.1",
      port,
      serverName: "trust-live",
      storeDir: mkdtempSync(join(tmpdir(), "cotal-js-")),
      authority,
    });
    broker = await (await selectBackend()).start({ config: conf, port, name: "trust" });
  });

  afterAll(async () => {
    await harnessTeardown();
  });

  it("accepts a space user, who can use JetStream in its own account", async () => {
    const nc = await connectCreds(broker.url, mintUserCreds(alpha, { name: "alice" }).creds);
    const jsm = await jetstreamManager(nc);
    await jsm.streams.add({ name: "orders", subjects: ["orders.>"] });
    const js = jsm.jetstream();
    const ack = await js.publish("orders.1", "hello");
    expect(ack.seq).toBe(1);
    const msg = await jsm.streams.getMessage("orders", { seq: 1 });
    expect(msg?.string()).toBe("hello");
    await nc.close();
  });

  it("walls spaces off: a beta cred sees nothing alpha publishes on the same subject", async () => {
    const a = await connectCreds(broker.url, mintUserCreds(alpha, { name: "a" }).creds);
    const b = await connectCreds(broker.url, mintUserCreds(beta, { name: "b" }).creds);
    const inB: string[] = [];
    const inBSelf: string[] = [];
    const sub = b.subscribe("shared.subject", {
      callback: (_e, m) => {
        (m.string() === "from-beta" ? inBSelf : inB).push(m.string());
      },
    });
    await b.flush();
    a.publish("shared.subject", "from-alpha");
    b.publish("shared.subject", "from-beta"); // positive control: beta's own message does arrive
    await a.flush();
    await b.flush();
    await new Promise((r) => setTimeout(r, 200));
    expect(inBSelf).toEqual(["from-beta"]);
    expect(inB).toEqual([]);
    sub.unsubscribe();
    // alpha's streams are invisible from beta
    const jsmA = await jetstreamManager(a);
    await jsmA.streams.add({ name: "alpha_only", subjects: ["alpha.only"] });
    const jsmB = await jetstreamManager(b);
    const names: string[] = [];
    for await (const s of jsmB.streams.names()) names.push(s);
    expect(names).not.toContain("alpha_only");
    await a.close();
    await b.close();
  });

  it("keeps the authority account out of reach of a space user", async () => {
    const auth = await connectCreds(broker.url, mintUserCreds(authority, { name: "cotal" }).creds);
    const kv = await new Kvm(auth).create("cotal_broker_inventory");
    await kv.put("inventory", "secret-list");
    const a = await connectCreds(broker.url, mintUserCreds(alpha, { name: "a2" }).creds);
    const kvFromAlpha = await new Kvm(a).open("cotal_broker_inventory");
    await expect(kvFromAlpha.get("inventory")).rejects.toThrow();
    const jsm = await jetstreamManager(a);
    const names: string[] = [];
    for await (const s of jsm.streams.names()) names.push(s);
    expect(names).not.toContain("KV_cotal_broker_inventory");
    expect((await kv.get("inventory"))?.string()).toBe("secret-list"); // control: it is there
    await a.close();
    await auth.close();
  });

  it("refuses a user of an account the broker does not preload", async () => {
    const stranger = createAccountTrust(trust.operator, "stranger", { kind: "space" });
    expect(await refusal(broker.url, mintUserCreds(stranger, { name: "x" }).creds)).toMatch(/authorization/i);
  });

  it("refuses an expired user", async () => {
    const creds = mintUserCreds(alpha, { name: "short", expiresInSeconds: 1 });
    await new Promise((r) => setTimeout(r, 2_100));
    expect(await refusal(broker.url, creds.creds)).toMatch(/authorization|expired/i);
  });

  it("enforces --allow-pub / --allow-sub permissions", async () => {
    const nc = await connectCreds(broker.url, mintUserCreds(alpha, { name: "narrow", allowPub: ["ok.>"], allowSub: ["ok.>", "_INBOX.>"] }).creds);
    const errors: string[] = [];
    (async () => {
      for await (const s of nc.status()) if (s.type === "error") errors.push(String((s as { error?: unknown }).error ?? ""));
    })().catch(() => undefined);
    nc.publish("denied.x", "no");
    nc.publish("ok.x", "yes");
    await nc.flush();
    await new Promise((r) => setTimeout(r, 200));
    expect(errors.join(" ")).toMatch(/permissions violation/i);
    await nc.close().catch(() => undefined);
  });

  it("connects a $SYS user minted with the retained system signing seed", async () => {
    const nc = await connectCreds(broker.url, mintSystemUserCreds(trust.system, { name: "observer" }).creds);
    const reply = await nc.request("$SYS.REQ.SERVER.PING.VARZ", undefined, { timeout: 2_000 });
    expect(JSON.parse(reply.string()).data?.server_name ?? JSON.parse(reply.string()).server?.name).toBe("trust-live");
    await nc.close();
  });
});
