import { describe, expect, it } from "vitest";
import { configDigest, createAccountTrust, createBrokerTrust, isCotalError, preloadedAccounts, renderedJetStreamMax, serverConfig, type RenderOptions } from "../src/internal.js";

const broker = createBrokerTrust({ retainSystemSigningSeed: false });
const authority = createAccountTrust(broker.operator, "authority", { kind: "authority" });
const alpha = createAccountTrust(broker.operator, "alpha", { kind: "space" });
const beta = createAccountTrust(broker.operator, "beta", { kind: "space" });
const gamma = createAccountTrust(broker.operator, "gamma", { kind: "space" });
const opts: RenderOptions = { host: "127.0.0.1", port: 4222, serverName: "t", storeDir: "/var/lib/cotal/nats", authority };

function refusedWith(fn: () => unknown, code: string): string {
  try {
    fn();
  } catch (e) {
    expect(isCotalError(e)).toBe(true);
    expect((e as { code: string }).code).toBe(code);
    return (e as Error).message;
  }
  throw new Error("expected a refusal");
}

describe("serverConfig", () => {
  it("preloads every space, the system account and the authority account", () => {
    const text = serverConfig(broker, [alpha, beta], opts);
    expect(text).toContain("resolver: MEMORY");
    expect(text).toContain(`system_account: ${broker.system.publicKey}`);
    expect(preloadedAccounts(text).sort()).toEqual([alpha.publicKey, beta.publicKey, authority.publicKey, broker.system.publicKey].sort());
    expect(text).toContain(`operator: "${broker.operator.jwt}"`);
    expect(text).toContain('store_dir: "/var/lib/cotal/nats"');
  });

  it("is byte-identical for the same input in any order, so digests are stable", () => {
    const a = serverConfig(broker, [gamma, alpha, beta], opts);
    const b = serverConfig(broker, [beta, gamma, alpha], opts);
    expect(a).toBe(b);
    expect(configDigest(a)).toBe(configDigest(b));
    expect(configDigest(a)).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(serverConfig(broker, [alpha], opts)).not.toBe(a);
  });

  it("refuses zero spaces", () => {
    expect(refusedWith(() => serverConfig(broker, [], opts), "render-refused")).toMatch(/zero spaces/);
  });

  it("refuses an account preloaded twice", () => {
    expect(refusedWith(() => serverConfig(broker, [alpha, { ...beta, publicKey: alpha.publicKey, jwt: alpha.jwt, name: "beta" }], opts), "render-refused")).toMatch(/preloaded twice/);
    expect(refusedWith(() => serverConfig(broker, [alpha, alpha], opts), "render-refused")).toMatch(/twice/);
    expect(refusedWith(() => serverConfig(broker, [alpha, { ...authority, name: "sneaky" }], opts), "render-refused")).toMatch(/preloaded twice/);
  });

  it("refuses an account signed by a foreign operator", () => {
    const other = createBrokerTrust({ retainSystemSigningSeed: false });
    const foreign = createAccountTrust(other.operator, "foreign", { kind: "space" });
    const msg = refusedWith(() => serverConfig(broker, [alpha, foreign], opts), "foreign-operator");
    expect(msg).toContain(other.operator.publicKey);
    refusedWith(() => serverConfig(broker, [alpha], { ...opts, authority: createAccountTrust(other.operator, "a", { kind: "authority" }) }), "foreign-operator");
  });

  it("refuses control characters and malformed material instead of writing them into the file", () => {
    refusedWith(() => serverConfig(broker, [alpha], { ...opts, storeDir: "/tmp/x\"\n}\nlisten: 0.0.0.0:1" }), "render-refused");
    refusedWith(() => serverConfig(broker, [{ ...alpha, jwt: `${alpha.jwt}"\nx` }], opts), "render-refused");
    refusedWith(() => serverConfig(broker, [{ ...alpha, name: "a\nb" }], opts), "render-refused");
    // quotes and backslashes in paths are escaped, not refused
    expect(serverConfig(broker, [alpha], { ...opts, storeDir: '/tmp/a"b\\c' })).toContain('store_dir: "/tmp/a\\"b\\\\c"');
  });

  it("renders sync_interval only when the server supports it", () => {
    expect(serverConfig(broker, [alpha], opts)).not.toContain("sync_interval");
    expect(serverConfig(broker, [alpha], { ...opts, syncAlways: true })).toContain("sync_interval: always");
  });

  it("renders the server-wide JetStream max inside the jetstream block, both or neither", () => {
    const text = serverConfig(broker, [alpha], { ...opts, jetstreamMax: { file: 64 * 1024 ** 2, memory: 8 * 1024 ** 2 } });
    expect(text).toMatch(/jetstream \{\n {2}store_dir: [^\n]+\n {2}max_file_store: 67108864\n {2}max_memory_store: 8388608\n/);
    expect(serverConfig(broker, [alpha], opts)).not.toContain("max_file_store");
    refusedWith(() => serverConfig(broker, [alpha], { ...opts, jetstreamMax: { file: 0, memory: 1 } }), "render-refused");
    refusedWith(() => serverConfig(broker, [alpha], { ...opts, jetstreamMax: { file: 1.5, memory: 1 } }), "render-refused");
  });
});

describe("renderedJetStreamMax", () => {
  it("reads back what serverConfig rendered, and nothing from a config without a max", () => {
    const jetstreamMax = { file: 100 * 1024 ** 2, memory: 16 * 1024 ** 2 };
    expect(renderedJetStreamMax(serverConfig(broker, [alpha], { ...opts, jetstreamMax }))).toEqual(jetstreamMax);
    expect(renderedJetStreamMax(serverConfig(broker, [alpha], opts))).toBeUndefined();
  });
});
