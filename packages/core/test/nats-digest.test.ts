import { describe, expect, it } from "vitest";
import { createAccountTrust, createBrokerTrust, serverConfig, type RenderAccount } from "../src/internal.js";
import { natsConfigDigest, natsConfigJson } from "../src/render/nats-digest.js";

// The prediction of nats-server's config_digest (docs/cluster.md "Proof by the server's digest").
// The vector's digest is what `nats-server -t -c` 2.15.3 printed for these bytes; the live cell in
// test-live/suites/server-versions.test.ts checks every rendered shape against the running server.

const broker = createBrokerTrust({ retainSystemSigningSeed: false });
const authority = createAccountTrust(broker.operator, "authority", { kind: "authority" });
const alpha = createAccountTrust(broker.operator, "alpha", { kind: "space" });
const space = (a: RenderAccount): RenderAccount => ({ name: a.name, publicKey: a.publicKey, jwt: a.jwt });

describe("natsConfigDigest", () => {
  it("is nats-server's digest of a config: Go's JSON of the parsed map, keys sorted, HTML characters escaped", () => {
    const text = 'listen: "127.0.0.1:4999"\nmax_payload: 1024\njetstream {\n  store_dir: "/tmp/x&<>\\"y"\n}\n';
    expect(natsConfigJson(text)).toBe('{"jetstream":{"store_dir":"/tmp/x\\u0026\\u003c\\u003e\\"y"},"listen":"127.0.0.1:4999","max_payload":1024}');
    expect(natsConfigDigest(text)).toBe("sha256:ff0100c212eba4e52f402e82b6693dce74abeabbfa934451db6854ba9d7f62ac");
    expect(natsConfigDigest(Buffer.from(text))).toBe(natsConfigDigest(text));
  });

  it("reads every value a node's render holds with the type the server's parser gives it", () => {
    const text = serverConfig(broker, [space(alpha)], {
      host: "10.0.0.2", port: 4222, serverName: "c-n2", storeDir: "/r/n2/store", authority, logFile: "/r/n2/log", pidFile: "/r/n2/pid", httpPort: 8222,
      maxPayload: 8 * 1024 ** 2, jetstreamMax: { file: 2 ** 40, memory: 2 ** 30 }, syncAlways: true,
      cluster: { name: "c", port: 6222, advertisePort: 7222, routes: ["nats-route://10.0.0.1:6222"], tls: { certFile: "/r/c.pem", keyFile: "/r/k.pem", caFile: "/r/ca.pem" }, auth: { user: "cotal-route", password: "ab".repeat(16) } },
    });
    const m = JSON.parse(natsConfigJson(text) ?? "null") as Record<string, any>;
    expect(Object.keys(m)).toEqual([...Object.keys(m)].sort());
    expect(m).toMatchObject({ max_payload: 8388608, logtime: true, resolver: "MEMORY", system_account: broker.system.publicKey, listen: "10.0.0.2:4222", http: "10.0.0.2:8222" });
    expect(m.jetstream).toEqual({ store_dir: "/r/n2/store", max_file_store: 2 ** 40, max_memory_store: 2 ** 30, sync_interval: "always" });
    expect(m.cluster.tls).toEqual({ cert_file: "/r/c.pem", key_file: "/r/k.pem", ca_file: "/r/ca.pem", verify: true, timeout: 5 });
    expect(m.cluster.routes).toEqual([`nats-route://cotal-route:${"ab".repeat(16)}@10.0.0.1:6222`]);
    expect(Object.keys(m.resolver_preload).sort()).toEqual([authority.publicKey, alpha.publicKey, broker.system.publicKey].sort());
    expect(m.resolver_preload[alpha.publicKey]).toBe(alpha.jwt);
    // comments are not in the parsed map: a render that differs only there has the same digest
    expect(natsConfigDigest(text.replace("# space alpha", "# another comment"))).toBe(natsConfigDigest(text));
    expect(natsConfigDigest(text.replace("max_payload: 8388608", "max_payload: 8388609"))).not.toBe(natsConfigDigest(text));
  });

  it("reads every scalar form it writes, arrays in order and escapes undone", () => {
    const text = 'a: false\nb: true\nc: -5\nd: ""\ne: "x\\\\y\\"z"\nf: [\n  "p"\n  "q"\n]\ng: {\n  h: MEMORY\n}\ni {\n}\n';
    expect(natsConfigJson(text)).toBe('{"a":false,"b":true,"c":-5,"d":"","e":"x\\\\y\\"z","f":["p","q"],"g":{"h":"MEMORY"},"i":{}}');
  });

  it.each([
    ["an include", 'include "other.conf"\n'],
    ["a word before the key", "a b: 1\n"],
    ["text after a block's brace", "jetstream {x\n}\n"],
    ["a key with a character the renderer never writes", "a-b: 1\n"],
    ["an array element of no known form", "routes: [\n  1K\n]\n"],
    ["a lone quote", 'server_name: "\n'],
    ["an unterminated string", 'server_name: "abc\n'],
    ["a quote inside a string", 'server_name: "a"b"\n'],
    ["a word ending in a quote", 'server_name: ab"\n'],
    ["a close before anything", "}\nport: 1\n"],
    ["an integer with leading zeros", "port: 007\n"],
    ["two spaces after the colon", "port:  1\n"],
    ["a size suffix the parser would scale", "max_payload: 1K\n"],
    ["an escape cotal never writes", 'server_name: "a\\nb"\n'],
    ["a key given twice", "port: 1\nport: 2\n"],
    ["a block left open", "jetstream {\n  store_dir: \"/x\"\n"],
    ["a stray close", "}\n"],
    ["an array closed as a map", "routes: [\n  \"a\"\n}\n"],
    ["a boolean word other than true or false", "logtime: yes\n"],
    ["a variable", "listen: $HOST\n"],
    ["an unquoted string the lexer may read otherwise", "listen: 127.0.0.1:4222\n"],
  ])("has no prediction for %s (never a guessed one)", (_what, text) => {
    expect(natsConfigDigest(text)).toBeUndefined();
  });
});
