import { createHash } from "node:crypto";
import { CotalError } from "../errors.js";
import { decodeJwt } from "../trust/index.js";
import { isValidSpaceName } from "../names.js";
import { ACCOUNT_KEY, JWT_TEXT, confString, confToken } from "./conf-escape.js";

/** The server-wide JetStream max in bytes (`max_file_store`, `max_memory_store`). */
export interface JetStreamMax {
  file: number;
  memory: number;
}

/** The max a config rendered by {@link serverConfig} carries, or undefined if it sets none (dynamic). */
export function renderedJetStreamMax(conf: string): JetStreamMax | undefined {
  const file = /^ {2}max_file_store: (\d+)$/m.exec(conf)?.[1];
  const memory = /^ {2}max_memory_store: (\d+)$/m.exec(conf)?.[1];
  return file !== undefined && memory !== undefined ? { file: Number(file), memory: Number(memory) } : undefined;
}

/** What the renderer needs of an account: no seeds ever reach it. */
export interface RenderAccount {
  name: string;
  publicKey: string;
  jwt: string;
}

export interface RenderBroker {
  operator: { publicKey: string; jwt: string };
  system: { publicKey: string; jwt: string };
}

export interface RenderOptions {
  host: string;
  port: number;
  serverName: string;
  storeDir: string;
  /** The broker-authority account (inventory + lease buckets); preloaded like a tenant, never listed as one. */
  authority: RenderAccount;
  logFile?: string;
  pidFile?: string;
  httpPort?: number;
  /** `max_payload` in bytes: the largest message (and inventory record) the server takes. */
  maxPayload?: number;
  /**
   * The server-wide JetStream max (`max_file_store`/`max_memory_store`, bytes): every account's
   * writes stop there, so tenant quotas summed below it leave the authority account its reserve.
   */
  jetstreamMax?: JetStreamMax;
  /** `jetstream { sync_interval: always }`; only servers that know the option may get it. */
  syncAlways?: boolean;
  /**
   * A private broker on the store (cold boot, offline work): no tenant is preloaded, so none can
   * connect while cotal reads the inventory. Only then may `spaces` be empty.
   */
  maintenance?: boolean;
  /** A node of a cluster root (docs/cluster.md): its `cluster {}` block; absent on a single broker. */
  cluster?: ClusterBlock;
}

/** `cluster { name, listen, routes }` of one node; `routes` are the other nodes' route URLs. */
export interface ClusterBlock {
  name: string;
  port: number;
  routes: readonly string[];
  /** Test-only (ClusterNodeSettings.testRoutePort): the route port this node advertises instead of `port`; absent, no `advertise` line. */
  advertisePort?: number;
  /** Mutual TLS on every route (`tls { … verify: true }`): this node's certificate and key, and the CA every node's is signed by. */
  tls?: { certFile: string; keyFile: string; caFile: string; pinned?: readonly string[] };
  /** Route authorization: the user and password every route must present; the rendered route URLs carry them. */
  auth?: { user: string; password: string };
}

function refuse(message: string, details?: Record<string, unknown>): never {
  throw new CotalError("render-refused", message, { details, next: "cotal status   # shows which records the render refused" });
}

function assertIssuedBy(acct: RenderAccount, operator: string, what: string): void {
  confToken(acct.publicKey, `${what} public key`, ACCOUNT_KEY);
  confToken(acct.jwt, `${what} JWT`, JWT_TEXT);
  const claims = decodeJwt(acct.jwt);
  if (claims.sub !== acct.publicKey) refuse(`${what} JWT does not name its own public key`, { account: acct.publicKey });
  if (claims.iss !== operator) {
    throw new CotalError("foreign-operator", `${what} is signed by operator ${claims.iss}, not this broker's ${operator}`, {
      next: "a space from another broker cannot be trusted here; remove its record or add it anew with `cotal space add <name>`",
      details: { account: acct.publicKey, issuer: claims.iss, operator },
    });
  }
}

/**
 * The whole-broker config: pure, sorted, byte-stable. `resolver: MEMORY` preloads every space, the
 * system account and the authority account; omission is revocation, so the inputs are checked, not trusted.
 */
export function serverConfig(broker: RenderBroker, spaces: readonly RenderAccount[], opts: RenderOptions): string {
  if (spaces.length === 0 && !opts.maintenance) refuse("refusing to render a config with zero spaces: it would evict every tenant");
  if (spaces.length > 0 && opts.maintenance) refuse("a maintenance config preloads no tenant");
  if (!Number.isInteger(opts.port) || opts.port < 1 || opts.port > 65535) refuse(`invalid listen port ${opts.port}`);
  const operator = broker.operator.publicKey;
  const sorted = [...spaces].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : a.publicKey < b.publicKey ? -1 : 1));

  const seen = new Map<string, string>();
  const claim = (key: string, who: string): void => {
    const prior = seen.get(key);
    if (prior !== undefined) refuse(`account ${key} would be preloaded twice (${prior} and ${who})`, { account: key, first: prior, second: who });
    seen.set(key, who);
  };
  const names = new Set<string>();
  for (const s of sorted) {
    if (!isValidSpaceName(s.name)) refuse(`invalid space name ${JSON.stringify(s.name)} in the render input`, { space: s.name });
    if (names.has(s.name)) refuse(`space ${s.name} is listed twice`, { space: s.name });
    names.add(s.name);
    assertIssuedBy(s, operator, `space ${s.name}`);
    claim(s.publicKey, `space ${s.name}`);
  }
  assertIssuedBy(opts.authority, operator, "the broker-authority account");
  claim(opts.authority.publicKey, "the broker-authority account");
  const sys = { name: "$SYS", publicKey: broker.system.publicKey, jwt: broker.system.jwt };
  assertIssuedBy(sys, operator, "the system account");
  claim(sys.publicKey, "the system account");

  const lines: string[] = [
    "# Rendered by cotal from the whole tenant inventory. Do not edit: every mutation re-renders this file.",
    `server_name: ${confString(opts.serverName, "server name")}`,
    `listen: ${confString(`${opts.host}:${opts.port}`, "listen address")}`,
  ];
  if (opts.maxPayload !== undefined) {
    // nats-server refuses a max_payload above max_pending (64 MiB by default).
    if (!Number.isSafeInteger(opts.maxPayload) || opts.maxPayload < 1 || opts.maxPayload > 64 * 1024 ** 2) refuse(`invalid max_payload ${opts.maxPayload}`);
    lines.push(`max_payload: ${opts.maxPayload}`);
  }
  if (opts.httpPort !== undefined) lines.push(`http: ${confString(`${opts.host}:${opts.httpPort}`, "monitor address")}`);
  if (opts.logFile !== undefined) lines.push(`log_file: ${confString(opts.logFile, "log file")}`, "logtime: true");
  if (opts.pidFile !== undefined) lines.push(`pid_file: ${confString(opts.pidFile, "pid file")}`);
  lines.push("jetstream {", `  store_dir: ${confString(opts.storeDir, "store dir")}`);
  if (opts.jetstreamMax) {
    // nats-server sizes both dynamically unless both are set, so they go together.
    const { file, memory } = opts.jetstreamMax;
    if (!Number.isSafeInteger(file) || file <= 0 || !Number.isSafeInteger(memory) || memory <= 0) refuse(`invalid JetStream max (file ${file}, memory ${memory})`);
    lines.push(`  max_file_store: ${file}`, `  max_memory_store: ${memory}`);
  }
  if (opts.syncAlways) lines.push("  sync_interval: always");
  lines.push("}");
  if (opts.cluster) lines.push(...clusterLines(opts.cluster, opts.host));
  lines.push(`operator: "${confToken(broker.operator.jwt, "operator JWT", JWT_TEXT)}"`);
  lines.push(`system_account: ${sys.publicKey}`);
  lines.push("resolver: MEMORY");
  lines.push("resolver_preload: {");
  lines.push(`  # broker authority`, `  ${opts.authority.publicKey}: "${opts.authority.jwt}"`);
  for (const s of sorted) lines.push(`  # space ${s.name}`, `  ${s.publicKey}: "${s.jwt}"`);
  lines.push(`  # system account`, `  ${sys.publicKey}: "${sys.jwt}"`);
  lines.push("}");
  return `${lines.join("\n")}\n`;
}

const ROUTE_USER = /^[a-z0-9][a-z0-9-]{0,31}$/;
const ROUTE_PASSWORD = /^[0-9a-f]{32,128}$/;
const ROUTE_PIN = /^[0-9a-f]{64}$/;

/** `pinned_certs`: every current node's certificate, so one the CA signed for a forgotten node is refused (docs/cluster.md "A forgotten node stays out"). */
function pinLines(pins: readonly string[] | undefined): string[] {
  if (pins === undefined) return [];
  if (pins.length === 0 || pins.some((p) => !ROUTE_PIN.test(p))) refuse("a route certificate pin is not a SHA-256 in hex");
  // One element a line, as the routes: the grammar render/nats-digest.ts predicts the server's digest of.
  return ["    pinned_certs: [", ...[...new Set(pins)].sort().map((p) => `      "${p}"`), "    ]"];
}

function clusterLines(c: ClusterBlock, host: string): string[] {
  if (!Number.isInteger(c.port) || c.port < 1 || c.port > 65535) refuse(`invalid cluster port ${c.port}`);
  if (c.advertisePort !== undefined && (!Number.isInteger(c.advertisePort) || c.advertisePort < 1 || c.advertisePort > 65535)) refuse(`invalid cluster advertise port ${c.advertisePort}`);
  if (c.routes.length === 0) refuse("a cluster node needs at least one route");
  const routes = [...new Set(c.routes)].sort();
  if (routes.length !== c.routes.length) refuse("a cluster node's routes repeat");
  // The credentials go into every route URL: only URL-safe ones, so the render never needs escaping.
  if (c.auth && (!ROUTE_USER.test(c.auth.user) || !ROUTE_PASSWORD.test(c.auth.password))) refuse("the route user or password is malformed");
  const withAuth = (url: string): string => {
    if (!c.auth) return url;
    const m = /^nats-route:\/\/([^@/]+)$/.exec(url);
    if (!m) refuse(`route URL ${JSON.stringify(url)} is not nats-route://host:port`);
    return `nats-route://${c.auth.user}:${c.auth.password}@${m[1]}`;
  };
  return [
    "cluster {",
    `  name: ${confString(c.name, "cluster name")}`,
    `  listen: ${confString(`${host}:${c.port}`, "cluster listen address")}`,
    ...(c.advertisePort !== undefined ? [`  advertise: ${confString(`${host}:${c.advertisePort}`, "cluster advertise address")}`] : []),
    // Routes verify their peer's certificate both ways (docs/cluster.md "Route TLS and auth").
    ...(c.tls
      ? ["  tls {", `    cert_file: ${confString(c.tls.certFile, "route certificate")}`, `    key_file: ${confString(c.tls.keyFile, "route key")}`, `    ca_file: ${confString(c.tls.caFile, "route CA")}`, "    verify: true", ...pinLines(c.tls.pinned), "    timeout: 5", "  }"]
      : []),
    ...(c.auth ? ["  authorization {", `    user: ${confString(c.auth.user, "route user")}`, `    password: ${confString(c.auth.password, "route password")}`, "    timeout: 5", "  }"] : []),
    "  routes: [",
    ...routes.map((r) => `    ${confString(withAuth(r), "route URL")}`),
    "  ]",
    "}",
  ];
}

export function configDigest(text: string | Uint8Array): string {
  return `sha256:${createHash("sha256").update(text).digest("hex")}`;
}
