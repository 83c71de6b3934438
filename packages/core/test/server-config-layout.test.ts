import { describe, expect, it } from "vitest";
import { createAccountTrust, createBrokerTrust, preloadedAccounts, serverConfig, type RenderAccount, type RenderOptions } from "../src/internal.js";
import { confString, confToken } from "../src/render/conf-escape.js";
import { refusalOf } from "./fixtures/records.js";

// The exact bytes matter: the file is what nats-server reads and its digest is what the saga proves.
const broker = createBrokerTrust({ retainSystemSigningSeed: false });
const authority = createAccountTrust(broker.operator, "authority", { kind: "authority" });
const alpha = createAccountTrust(broker.operator, "alpha", { kind: "space" });
const beta = createAccountTrust(broker.operator, "beta", { kind: "space" });
const opts: RenderOptions = { host: "127.0.0.1", port: 4222, serverName: "t", storeDir: "/var/lib/cotal/nats", authority };
const space = (a: RenderAccount): RenderAccount => ({ name: a.name, publicKey: a.publicKey, jwt: a.jwt });

const refusal = refusalOf;

describe("serverConfig layout", () => {
  it("renders the whole file, line for line", () => {
    const text = serverConfig(broker, [space(beta), space(alpha)], { ...opts, httpPort: 8222, logFile: "/l/n.log", pidFile: "/l/n.pid", syncAlways: true });
    expect(text).toBe(
      [
        "# Rendered by cotal from the whole tenant inventory. Do not edit: every mutation re-renders this file.",
        'server_name: "t"',
        'listen: "127.0.0.1:4222"',
        'http: "127.0.0.1:8222"',
        'log_file: "/l/n.log"',
        "logtime: true",
        'pid_file: "/l/n.pid"',
        "jetstream {",
        '  store_dir: "/var/lib/cotal/nats"',
        "  sync_interval: always",
        "}",
        `operator: "${broker.operator.jwt}"`,
        `system_account: ${broker.system.publicKey}`,
        "resolver: MEMORY",
        "resolver_preload: {",
        "  # broker authority",
        `  ${authority.publicKey}: "${authority.jwt}"`,
        "  # space alpha",
        `  ${alpha.publicKey}: "${alpha.jwt}"`,
        "  # space beta",
        `  ${beta.publicKey}: "${beta.jwt}"`,
        "  # system account",
        `  ${broker.system.publicKey}: "${broker.system.jwt}"`,
        "}",
        "",
      ].join("\n"),
    );
  });

  it("leaves out the optional lines when their options are absent", () => {
    const text = serverConfig(broker, [space(alpha)], opts);
    expect(text).not.toMatch(/^(http|log_file|logtime|pid_file):/m);
    expect(text.split("\n").slice(1, 6)).toEqual(['server_name: "t"', 'listen: "127.0.0.1:4222"', "jetstream {", '  store_dir: "/var/lib/cotal/nats"', "}"]);
  });

  it("a maintenance config preloads only the authority and system accounts", () => {
    const text = serverConfig(broker, [], { ...opts, maintenance: true });
    expect(preloadedAccounts(text)).toEqual([authority.publicKey, broker.system.publicKey]);
  });

  it("sorts spaces by name whatever the input order", () => {
    const names = ["m", "b", "z", "a", "k"];
    const accts = names.map((n) => space(createAccountTrust(broker.operator, n, { kind: "space" })));
    const text = serverConfig(broker, accts, opts);
    expect([...text.matchAll(/^ {2}# space (\S+)$/gm)].map((m) => m[1])).toEqual(["a", "b", "k", "m", "z"]);
    expect(serverConfig(broker, [...accts].reverse(), opts)).toBe(text);
  });

  it("two entries under one name give the same refusal in either order", () => {
    const other = createBrokerTrust({ retainSystemSigningSeed: false });
    const foreign = { ...space(createAccountTrust(other.operator, "alpha", { kind: "space" })), name: "alpha" };
    const a = refusal(() => serverConfig(broker, [space(alpha), foreign], opts));
    const b = refusal(() => serverConfig(broker, [foreign, space(alpha)], opts));
    expect([a.code, a.message]).toEqual([b.code, b.message]);
  });
});

describe("serverConfig refusals say what and where", () => {
  it("zero spaces outside maintenance, and any space in maintenance", () => {
    const zero = refusal(() => serverConfig(broker, [], opts));
    expect(zero.code).toBe("render-refused");
    expect(zero.next).toBe("cotal status   # shows which records the render refused");
    const maint = refusal(() => serverConfig(broker, [space(alpha)], { ...opts, maintenance: true }));
    expect([maint.code, maint.message]).toEqual(["render-refused", "a maintenance config preloads no tenant"]);
  });

  it.each([0, -1, 65536, 1.5, Number.NaN])("listen port %s", (port) => {
    const e = refusal(() => serverConfig(broker, [space(alpha)], { ...opts, port }));
    expect([e.code, e.message]).toEqual(["render-refused", `invalid listen port ${port}`]);
  });

  it.each([1, 65535])("accepts listen port %s", (port) => {
    expect(serverConfig(broker, [space(alpha)], { ...opts, port })).toContain(`listen: "127.0.0.1:${port}"`);
  });

  it("an invalid or repeated space name", () => {
    const bad = refusal(() => serverConfig(broker, [{ ...space(alpha), name: "Alpha" }], opts));
    expect([bad.message, bad.details]).toEqual(['invalid space name "Alpha" in the render input', { space: "Alpha" }]);
    const twice = refusal(() => serverConfig(broker, [space(alpha), { ...space(beta), name: "alpha" }], opts));
    expect([twice.message, twice.details]).toEqual(["space alpha is listed twice", { space: "alpha" }]);
  });

  it("an account preloaded twice names both owners", () => {
    const e = refusal(() => serverConfig(broker, [space(alpha), { ...space(alpha), name: "beta" }], opts));
    expect(e.message).toBe(`account ${alpha.publicKey} would be preloaded twice (space alpha and space beta)`);
    expect(e.details).toEqual({ account: alpha.publicKey, first: "space alpha", second: "space beta" });
    const auth = refusal(() => serverConfig(broker, [{ ...space(authority), name: "sneaky" }], opts));
    expect(auth.details).toEqual({ account: authority.publicKey, first: "space sneaky", second: "the broker-authority account" });
    const sys = refusal(() => serverConfig(broker, [{ name: "sys", publicKey: broker.system.publicKey, jwt: broker.system.jwt }], opts));
    expect(sys.details).toEqual({ account: broker.system.publicKey, first: "space sys", second: "the system account" });
  });

  it("a JWT that names another account", () => {
    const e = refusal(() => serverConfig(broker, [{ ...space(alpha), jwt: beta.jwt }], opts));
    expect([e.code, e.message, e.details]).toEqual(["render-refused", "space alpha JWT does not name its own public key", { account: alpha.publicKey }]);
  });

  it("malformed keys and JWTs name the slot", () => {
    expect(refusal(() => serverConfig(broker, [{ ...space(alpha), publicKey: "x" }], opts)).message).toBe("space alpha public key is not well-formed; refusing to render it");
    expect(refusal(() => serverConfig(broker, [{ ...space(alpha), jwt: "a.b" }], opts)).message).toBe("space alpha JWT is not well-formed; refusing to render it");
    expect(refusal(() => serverConfig(broker, [space(alpha)], { ...opts, authority: { ...authority, publicKey: "x" } })).message).toBe("the broker-authority account public key is not well-formed; refusing to render it");
    expect(refusal(() => serverConfig({ ...broker, system: { ...broker.system, jwt: "x" } }, [space(alpha)], opts)).message).toBe("the system account JWT is not well-formed; refusing to render it");
    expect(refusal(() => serverConfig({ ...broker, operator: { ...broker.operator, jwt: "x" } }, [space(alpha)], opts)).message).toBe("operator JWT is not well-formed; refusing to render it");
  });

  it("a foreign operator's space names the account, its issuer and ours", () => {
    const other = createBrokerTrust({ retainSystemSigningSeed: false });
    const foreign = space(createAccountTrust(other.operator, "foreign", { kind: "space" }));
    const e = refusal(() => serverConfig(broker, [foreign], opts));
    expect(e.code).toBe("foreign-operator");
    expect(e.message).toBe(`space foreign is signed by operator ${other.operator.publicKey}, not this broker's ${broker.operator.publicKey}`);
    expect(e.details).toEqual({ account: foreign.publicKey, issuer: other.operator.publicKey, operator: broker.operator.publicKey });
    expect(e.next).toMatch(/cotal space add <name>/);
    const sys = refusal(() => serverConfig({ ...broker, system: other.system }, [space(alpha)], opts));
    expect(sys.message).toMatch(/^the system account is signed by operator /);
    expect(refusal(() => serverConfig(broker, [space(alpha)], { ...opts, serverName: "a\u0007" })).message).toBe("server name contains a control character; refusing to render it into server.conf");
  });

  it("control characters in every quoted slot are refused, naming the slot", () => {
    const slot = (o: Partial<RenderOptions>) => refusal(() => serverConfig(broker, [space(alpha)], { ...opts, ...o })).details;
    expect(slot({ host: "a\nb" })).toEqual({ what: "listen address" });
    expect(slot({ host: "127.0.0.1", httpPort: "1\n" as unknown as number })).toEqual({ what: "monitor address" });
    expect(slot({ logFile: "/l\u007f" })).toEqual({ what: "log file" });
    expect(slot({ pidFile: "/p\u0000" })).toEqual({ what: "pid file" });
    expect(slot({ storeDir: "/s\t" })).toEqual({ what: "store dir" });
    expect(slot({ serverName: "\u001f" })).toEqual({ what: "server name" });
  });
});

describe("conf escaping", () => {
  it("quotes, escaping backslashes and double quotes only", () => {
    expect(confString('a\\b"c d', "x")).toBe('"a\\\\b\\"c d"');
    expect(confString("é ~ { } :", "x")).toBe('"é ~ { } :"');
  });

  it("confToken accepts only a whole match of the pattern", () => {
    const pattern = /^ab$/;
    expect(confToken("ab", "slot", pattern)).toBe("ab");
    const e = refusal(() => confToken("xab", "slot", pattern));
    expect([e.code, e.message, e.details]).toEqual(["render-refused", "slot is not well-formed; refusing to render it", { what: "slot" }]);
  });

  it("account keys and JWTs must match entirely", () => {
    const jwt = alpha.jwt;
    for (const bad of [`x${alpha.publicKey}`, `${alpha.publicKey}x`]) expect(refusal(() => serverConfig(broker, [{ ...space(alpha), publicKey: bad }], opts)).message).toMatch(/public key is not well-formed/);
    expect(refusal(() => serverConfig(broker, [{ ...space(alpha), jwt: ` ${jwt}` }], opts)).message).toMatch(/JWT is not well-formed/);
  });
});

describe("preloadedAccounts", () => {
  const K = (c: string) => `A${c.repeat(55)}`;
  it("reads only the keys inside resolver_preload, at the start of a line", () => {
    const text = [`system_account: ${K("B")}`, "resolver_preload: {", `  ${K("C")}: "j"`, `  # ${K("D")}: "j"`, `x ${K("E")}: "j"`, `  ${K("F")} : "j"`, "}", `${K("G")}: "after"`, ""].join("\n");
    expect(preloadedAccounts(text)).toEqual([K("C"), K("F")]);
  });

  it("is empty without a preload block, and reads to the end when the block is unterminated", () => {
    expect(preloadedAccounts(`${K("C")}: "j"\n`)).toEqual([]);
    expect(preloadedAccounts(`resolver_preload: {\n  ${K("C")}: "j"`)).toEqual([K("C")]);
    expect(preloadedAccounts(`resolver_preload: {\n  ${K("C")}: "j"\n}\n`)).toEqual([K("C")]);
    expect(preloadedAccounts(`resolver_preload: {\n  ${K("C")}:`)).toEqual([K("C")]);
  });

  it("finds a block at the very start of the text", () => {
    expect(preloadedAccounts(`resolver_preload: {\n${K("C")}:"j"\n}`)).toEqual([K("C")]);
  });
});
