import { execFile } from "node:child_process";
import { chmodSync, closeSync, existsSync, fsyncSync, openSync, readdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { isAbsolute, join } from "node:path";
import { isIP } from "node:net";
import { X509Certificate, createHash, randomBytes } from "node:crypto";
import { promisify } from "node:util";
import { GUARDS_ON, type Guards } from "../guards.js";
import { CotalError, RERUN } from "../errors.js";
import type { RootLayout } from "./layout.js";
import { SECRET_DIR_MODE, SECRET_FILE_MODE, ensureSecretDir, fsyncDir, readTextIfExists } from "./secret-files.js";

// Route TLS and auth of a cluster root (docs/cluster.md "Route TLS and auth"): a route between two
// nodes is mutual TLS against the cluster's CA, and carries the cluster's route user and password,
// so a process that is not a node cannot join the cluster (and see every tenant's traffic).

/** Where the route certificates come from (settings.json `cluster.routeTls`, fixed at creation). */
export type RouteTls =
  /** cotal's own CA and per-node certificates, made when the root was created, under `<root>/routes/`. */
  | { source: "cotal" }
  /** The operator's: one CA file, and each node's certificate and key (absolute paths). */
  | { source: "files"; caFile: string; nodes: Record<string, { certFile: string; keyFile: string }> };

/** settings.json `cluster.routeAuth`: the user every node's routes present; its password is in {@link routeAuthFile}. */
export interface RouteAuth {
  user: string;
}

/** The files one node's `cluster { tls {} }` names. */
export interface NodeTlsFiles {
  certFile: string;
  keyFile: string;
  caFile: string;
}

const ROUTE_USER = "cotal-route";
const USER = /^[a-z0-9][a-z0-9-]{0,31}$/;
const PASSWORD = /^[0-9a-f]{32,128}$/;
const DAYS = "3650";

/** `<root>/routes/`: the CA (and its key), each node's certificate and key, the route password. 0700, every file 0600. */
export function routesDir(layout: RootLayout): string {
  return join(layout.root, "routes");
}
export function routeAuthFile(layout: RootLayout): string {
  return join(routesDir(layout), "route-auth.json");
}
/** The files of cotal's own CA (`source: "cotal"`) for `node`. */
export function cotalTlsFiles(layout: RootLayout, node: string): NodeTlsFiles {
  const dir = routesDir(layout);
  return { certFile: join(dir, `${node}.pem`), keyFile: join(dir, `${node}-key.pem`), caFile: join(dir, "ca.pem") };
}

/** Validates settings' `routeTls` / `routeAuth` (clusterOf's refusals), or says what is wrong. */
export function routeSecurityProblem(c: { routeTls?: unknown; routeAuth?: unknown }, nodes: readonly string[]): string | undefined {
  const { routeTls, routeAuth } = c;
  if (routeAuth !== undefined) {
    const user = (routeAuth as { user?: unknown } | null)?.user;
    if (typeof routeAuth !== "object" || routeAuth === null || typeof user !== "string" || !USER.test(user) || Object.keys(routeAuth).length !== 1) return "routeAuth is not {user: a [a-z0-9-] name}";
  }
  if (routeTls === undefined) return undefined;
  const t = routeTls as Record<string, unknown> | null;
  if (typeof t !== "object" || t === null) return "routeTls is not an object";
  if (t.source === "cotal") return Object.keys(t).length === 1 ? undefined : "routeTls {source: cotal} takes no other field";
  if (t.source !== "files") return `routeTls source ${JSON.stringify(t.source)} is not "cotal" or "files"`;
  const path = (p: unknown): boolean => typeof p === "string" && isAbsolute(p) && !/["\n\r\\]/.test(p);
  if (!path(t.caFile)) return "routeTls caFile is not an absolute path";
  const per = t.nodes as Record<string, { certFile?: unknown; keyFile?: unknown }> | null;
  if (typeof per !== "object" || per === null) return "routeTls nodes is not an object";
  for (const n of nodes) if (!path(per[n]?.certFile) || !path(per[n]?.keyFile)) return `routeTls nodes.${n} lacks an absolute certFile and keyFile`;
  const extra = Object.keys(per).filter((n) => !nodes.includes(n));
  return extra.length > 0 ? `routeTls nodes names no node ${extra.join(", ")}` : undefined;
}

/** What one node's `cluster {}` carries beside its routes: the TLS files and the route credentials; none on a root made before them. */
export function nodeRouteSecurity(layout: RootLayout, cluster: { routeTls?: RouteTls; routeAuth?: RouteAuth }, node: string, guards: Guards = GUARDS_ON): { tls?: NodeTlsFiles; auth?: { user: string; password: string } } {
  if (guards.ROUTES_WITHOUT_AUTH) return {};
  const tls = cluster.routeTls === undefined ? undefined : cluster.routeTls.source === "cotal" ? cotalTlsFiles(layout, node) : { ...(cluster.routeTls.nodes[node] as { certFile: string; keyFile: string }), caFile: cluster.routeTls.caFile };
  return { ...(tls ? { tls } : {}), ...(cluster.routeAuth ? { auth: { user: cluster.routeAuth.user, password: loadRoutePassword(layout) } } : {}) };
}

/** A route certificate's pin as nats-server's `pinned_certs` takes it: the SHA-256 of its DER public key (SPKI), in hex. */
export function routePin(certPem: string): string {
  return createHash("sha256").update(new X509Certificate(certPem).publicKey.export({ type: "spki", format: "der" })).digest("hex");
}

/**
 * Every node's route pin, from its certificate on this host (docs/cluster.md "A forgotten node stays
 * out"): with them every node refuses a route from a certificate no current node holds. None when the
 * routes carry no TLS, or when an operator's certificate is not readable here (then nothing is pinned).
 */
export function routePins(layout: RootLayout, cluster: { routeTls?: RouteTls; nodes: readonly { name: string }[] }, guards: Guards = GUARDS_ON): Record<string, string> | undefined {
  if (!cluster.routeTls || guards.ROUTES_UNPINNED || guards.ROUTES_WITHOUT_AUTH) return undefined;
  const pins: Record<string, string> = {};
  for (const n of cluster.nodes) {
    const file = cluster.routeTls.source === "cotal" ? cotalTlsFiles(layout, n.name).certFile : cluster.routeTls.nodes[n.name]?.certFile;
    const pem = file === undefined ? undefined : readTextIfExists(file);
    if (pem === undefined) {
      if (cluster.routeTls.source === "files") return undefined;
      throw new CotalError("corrupt-record", `${file ?? `node ${n.name}'s route certificate`} is missing: no node can pin ${n.name}'s routes`, { next: `restore ${routesDir(layout)} from a backup of ${layout.root}` });
    }
    try {
      pins[n.name] = routePin(pem);
    } catch {
      throw new CotalError("corrupt-record", `${file} does not hold a PEM certificate: no node can pin ${n.name}'s routes`, { next: `restore ${file} from a backup of ${layout.root}` });
    }
  }
  return pins;
}

function loadRoutePassword(layout: RootLayout): string {
  const file = routeAuthFile(layout);
  const text = readTextIfExists(file);
  let password: unknown;
  try {
    password = text === undefined ? undefined : (JSON.parse(text) as { password?: unknown }).password;
  } catch {
    password = undefined;
  }
  if (typeof password !== "string" || !PASSWORD.test(password)) {
    throw new CotalError("corrupt-record", `${file} is missing or holds no route password: no node can render its routes`, {
      next: `restore ${file} from a backup of ${layout.root} (every node must carry the same password)`,
    });
  }
  return password;
}

const run = promisify(execFile);

async function openssl(args: string[], cwd: string): Promise<void> {
  try {
    await run("openssl", args, { cwd, timeout: 30_000 });
  } catch (err) {
    // openssl's stderr names files and options, never key bytes.
    const e = err as { stderr?: string; message: string; code?: string };
    const why = e.code === "ENOENT" ? "openssl is not installed" : (e.stderr ?? e.message).trim().split("\n").slice(0, 3).join(" ");
    throw new CotalError("io", `could not make the cluster's route certificates (openssl ${args[0]}): ${why}`, {
      next: "apt-get install -y openssl   # then create the cluster root again: cotal up --cluster 3 --detach",
    });
  }
}

/** The subjectAltNames a node's certificate needs: every address another node dials it at. */
function altNames(hosts: readonly string[]): string {
  return [...new Set(["127.0.0.1", "localhost", ...hosts])].map((h) => (isIP(h) ? `IP:${h}` : `DNS:${h}`)).join(",");
}

/**
 * Makes `<root>/routes/` for a new cluster root: a CA (P-256, ten years), one certificate per node
 * signed by it (serverAuth and clientAuth: a route is both), and a random route password. Everything
 * is written into a private staging directory and renamed into place, so a crash leaves no half set.
 * Returns the settings fields that name it.
 */
export async function createRouteSecurity(layout: RootLayout, cluster: { name: string; nodes: readonly { name: string }[] }, hostOf: (node: string) => string): Promise<{ routeTls: RouteTls; routeAuth: RouteAuth }> {
  const stage = join(layout.root, `.routes.${process.pid}.${randomBytes(4).toString("hex")}.tmp`);
  ensureSecretDir(stage);
  try {
    await openssl(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", "ca-key.pem"], stage);
    await openssl(["req", "-x509", "-new", "-key", "ca-key.pem", "-sha256", "-days", DAYS, "-subj", `/CN=cotal route CA ${cluster.name}`, "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign", "-out", "ca.pem"], stage);
    for (const n of cluster.nodes) await signNode(stage, n.name, hostOf(n.name), { cert: "ca.pem", key: "ca-key.pem" });
    writeFileSync(join(stage, "route-auth.json"), `${JSON.stringify({ user: ROUTE_USER, password: randomBytes(24).toString("hex") })}\n`, { mode: SECRET_FILE_MODE });
    syncPrivate(stage);
    // Only a root still being created gets here (no auth/ yet): a set left by a crashed creation is replaced.
    if (existsSync(routesDir(layout))) rmSync(routesDir(layout), { recursive: true, force: true });
    renameSync(stage, routesDir(layout));
    fsyncDir(layout.root);
  } catch (err) {
    rmSync(stage, { recursive: true, force: true });
    throw err;
  }
  return { routeTls: { source: "cotal" }, routeAuth: { user: ROUTE_USER } };
}

/** Every file of `dir` 0600 and on disk, the directory itself 0700: what is renamed into place is whole. */
function syncPrivate(dir: string): void {
  for (const f of readdirSync(dir)) {
    const p = join(dir, f);
    chmodSync(p, SECRET_FILE_MODE);
    const fd = openSync(p, "r");
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  }
  chmodSync(dir, SECRET_DIR_MODE);
}

/**
 * The one home of a node's route certificate (docs/cluster.md "Route TLS and auth"): a P-256 key and a
 * certificate for `<node>` signed by the CA at `ca` (paths relative to `dir`), its SANs every address
 * another node dials it at, serverAuth and clientAuth. Writes `<node>.pem` and `<node>-key.pem` in `dir`.
 */
async function signNode(dir: string, node: string, host: string, ca: { cert: string; key: string }): Promise<void> {
  writeFileSync(join(dir, `${node}.ext`), `subjectAltName=${altNames([host])}\nextendedKeyUsage=serverAuth,clientAuth\nkeyUsage=critical,digitalSignature\nbasicConstraints=critical,CA:FALSE\n`, { mode: SECRET_FILE_MODE });
  await openssl(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", `${node}-key.pem`], dir);
  await openssl(["req", "-new", "-key", `${node}-key.pem`, "-subj", `/CN=${node}`, "-out", `${node}.csr`], dir);
  await openssl(["x509", "-req", "-in", `${node}.csr`, "-CA", ca.cert, "-CAkey", ca.key, "-set_serial", `0x${randomBytes(16).toString("hex")}`, "-days", DAYS, "-sha256", "-extfile", `${node}.ext`, "-out", `${node}.pem`], dir);
  rmSync(join(dir, `${node}.csr`));
  rmSync(join(dir, `${node}.ext`));
}

/**
 * `cotal node add` on a root whose routes use cotal's CA: the new node's certificate, signed in a
 * private staging directory beside the CA and renamed into `<root>/routes/` (key first, so a
 * certificate never stands without its key). The CA's key never leaves the control host.
 */
export async function addNodeCertificate(layout: RootLayout, node: string, host: string): Promise<NodeTlsFiles> {
  const dir = routesDir(layout);
  if (!existsSync(join(dir, "ca.pem")) || !existsSync(join(dir, "ca-key.pem"))) {
    throw new CotalError("corrupt-record", `${dir} lacks the cluster's CA (ca.pem, ca-key.pem), so no node certificate can be signed; nothing was changed`, {
      next: `restore ${dir} from a backup of the root, then: ${RERUN}`,
    });
  }
  const stage = join(dir, `.add.${process.pid}.${randomBytes(4).toString("hex")}.tmp`);
  ensureSecretDir(stage);
  try {
    await signNode(stage, node, host, { cert: join(dir, "ca.pem"), key: join(dir, "ca-key.pem") });
    syncPrivate(stage);
    const files = cotalTlsFiles(layout, node);
    renameSync(join(stage, `${node}-key.pem`), files.keyFile);
    renameSync(join(stage, `${node}.pem`), files.certFile);
    fsyncDir(dir);
    return files;
  } finally {
    rmSync(stage, { recursive: true, force: true });
  }
}
