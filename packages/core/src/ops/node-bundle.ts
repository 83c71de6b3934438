/**
 * `cotal node bundle` (docs/cluster.md "A node directory of its own"): on the control host, the
 * directory a node's host keeps instead of the root — settings.json, the node's route files and its
 * agent's two users, and a marker naming the node — written 0700/0600 under a temporary name and
 * renamed whole, then scanned: it holds no seed of the root (its agent's user keys are the only private
 * keys). Copied to the node's host at the same path, `cotal --root DIR node run --node N` runs there.
 */
import { copyFileSync, existsSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { randomBytes } from "node:crypto";
import { GUARDS_ON, type Guards } from "../guards.js";
import { CotalError } from "../errors.js";
import { shellWord } from "../error-shape.js";
import { clusterOf, nodeHost } from "../root/cluster-settings.js";
import { cotalTlsFiles, routeAuthFile } from "../root/route-security.js";
import { agentCredsFiles, ensureAgentCreds } from "../root/agent-creds.js";
import { RootLayout } from "../root/layout.js";
import { bundledMaterialFile, NODE_DIR_MARKER, nodeDirMarker } from "../root/node-dir.js";
import { nodeMaterial } from "../broker/node-material.js";
import { ensureSecretDir, writeJsonAtomic } from "../root/secret-files.js";
import { loadSettings } from "../root/settings.js";
import { leaseKeyFor } from "../verb/session.js";

export interface NodeBundleOptions {
  root: string;
  node: string;
  /** The directory to write; it must not exist yet, or be empty. Its path is the one the node's host uses. */
  out: string;
  guards?: Guards;
}

export interface NodeBundleResult {
  node: string;
  host: string;
  dir: string;
  /** What it holds, relative to `dir`. */
  files: string[];
  next: string[];
}

/** An nkeys seed of any kind but a user's (`SU`): what a node's directory must never hold. */
const ROOT_SEED = /S[OANCX][A-Z2-7]{56}/;

export function bundleNode(opts: NodeBundleOptions): NodeBundleResult {
  const layout = new RootLayout(opts.root);
  const settings = loadSettings(layout);
  const cluster = clusterOf(layout, settings);
  if (!settings || !cluster) throw new CotalError("invalid-argument", `${layout.root} is not a cluster root: a node directory is for a node of \`cotal up --cluster N\``, { next: `cotal --root ${shellWord(layout.root)} status` });
  const self = cluster.nodes.find((n) => n.name === opts.node);
  if (!self) throw new CotalError("invalid-argument", `${layout.root} has no node ${JSON.stringify(opts.node)}; its nodes: ${cluster.nodes.map((n) => n.name).join(", ")}`, { next: `cotal --root ${shellWord(layout.root)} status` });
  const dir = resolve(opts.out);
  refuseOut(layout, dir, self.name);
  ensureAgentCreds(layout, self.name, opts.guards ?? GUARDS_ON);
  const sources = bundleSources(layout, cluster, self.name);
  const host = nodeHost(self, settings.host);
  const tmp = join(dirname(dir), `.${randomBytes(6).toString("hex")}.cotal-bundle`);
  try {
    ensureSecretDir(tmp);
    for (const from of sources) {
      const to = join(tmp, relative(layout.root, from));
      ensureSecretDir(dirname(to));
      copyFileSync(from, to);
    }
    // The material of today (public): its held boot before the cluster published any (a new cluster's first start).
    writeJsonAtomic(bundledMaterialFile(new RootLayout(tmp), self.name), nodeMaterial(layout, opts.guards ?? GUARDS_ON));
    writeJsonAtomic(join(tmp, NODE_DIR_MARKER), nodeDirMarker({ node: self.name, cluster: cluster.name, host, leaseKey: leaseKeyFor(layout) }));
    refuseSeeds(tmp);
    if (existsSync(dir)) rmSync(dir, { recursive: true }); // empty, checked above
    renameSync(tmp, dir);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  const files = [NODE_DIR_MARKER, relative(dir, bundledMaterialFile(new RootLayout(dir), self.name)), ...sources.map((f) => relative(layout.root, f))];
  return { node: self.name, host, dir, files, next: [`cotal --root ${shellWord(dir)} node run --node ${self.name}   # on ${host}, once ${dir} is copied there (the same path, 0700)`] };
}

/** The root's files a node's host needs: settings.json, its route files (cotal's CA), the route password, its agent's users. */
function bundleSources(layout: RootLayout, cluster: NonNullable<ReturnType<typeof clusterOf>>, node: string): string[] {
  const tls = cluster.routeTls?.source === "cotal" ? cotalTlsFiles(layout, node) : undefined;
  const creds = agentCredsFiles(layout, node);
  const files = [layout.settingsFile, ...(tls ? [tls.caFile, tls.certFile, tls.keyFile] : []), ...(cluster.routeAuth ? [routeAuthFile(layout)] : []), creds.authority, creds.system];
  const missing = files.filter((f) => !existsSync(f));
  if (missing.length > 0) throw new CotalError("corrupt-record", `node ${node}'s files are missing from ${layout.root}: ${missing.join(", ")}; nothing was written`, { next: `cotal --root ${shellWord(layout.root)} up --detach   # writes every node's route files and agent users` });
  return files;
}

/** The output must be new (or an empty directory) and outside the root: a bundle never overwrites. */
function refuseOut(layout: RootLayout, dir: string, node: string): void {
  const inside = relative(resolve(layout.root), dir);
  if (inside === "" || (!inside.startsWith("..") && !inside.startsWith("/"))) {
    throw new CotalError("invalid-argument", `--out ${dir} is inside the root ${layout.root}: a node's directory is copied to its host, never kept in the root; nothing was written`, { next: `cotal --root ${shellWord(layout.root)} node bundle --node ${node} --out ${shellWord(join(dirname(resolve(layout.root)), `${node}-dir`))}` });
  }
  if (existsSync(dir) && (!statSync(dir).isDirectory() || readdirSync(dir).length > 0)) {
    throw new CotalError("invalid-argument", `--out ${dir} exists and is not an empty directory; nothing was written`, { next: `ls -la ${shellWord(dir)}   # choose a new --out, or remove this one if it is an old bundle` });
  }
}

/** The self-check: a seed of the root (operator, account, server, cluster, curve) in any file refuses the bundle. */
function refuseSeeds(dir: string): void {
  for (const e of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!e.isFile()) continue;
    const path = join(e.parentPath, e.name);
    if (ROOT_SEED.test(readFileSync(path, "latin1"))) throw new CotalError("corrupt-record", `${path} holds a seed of the root: a node's directory must hold none; nothing was written`, { next: "cotal status   # report this: the files a node bundle copies hold no seed by design" });
  }
}
