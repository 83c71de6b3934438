/**
 * A node's directory (docs/cluster.md "A node directory of its own"): what `cotal node bundle` writes
 * for a node's host, shaped like a root but holding no operator trust (no auth/). Its marker names the
 * node; only `cotal node run` accepts such a directory as its --root.
 */
import { join } from "node:path";
import type { NodeMaterial } from "../broker/node-material.js";
import type { RootLayout } from "./layout.js";
import { readTextIfExists } from "./secret-files.js";

export const NODE_DIR_MARKER = "node.json";
const FORMAT = "cotal.node-dir/1";

export interface NodeDirMarker {
  format: typeof FORMAT;
  node: string;
  cluster: string;
  host: string;
  /** The control root's writer lease key (verb/session.ts leaseKeyFor): the agent fences on the writers' lease, not one of its own path. */
  leaseKey: string;
  at: string;
}

export function nodeDirMarker(m: Omit<NodeDirMarker, "format" | "at">, now = new Date()): NodeDirMarker {
  return { format: FORMAT, ...m, at: now.toISOString() };
}

/** A node directory's marker, when `dir` is one (its marker readable and whole); undefined otherwise. */
export function nodeDirMarkerOf(dir: string): NodeDirMarker | undefined {
  const text = readTextIfExists(join(dir, NODE_DIR_MARKER));
  if (text === undefined) return undefined;
  try {
    const m = JSON.parse(text) as Partial<NodeDirMarker> | null;
    const whole = m?.format === FORMAT && [m.node, m.cluster, m.host, m.leaseKey, m.at].every((v) => typeof v === "string" && v !== "");
    return whole ? (m as NodeDirMarker) : undefined;
  } catch {
    return undefined;
  }
}

/** The node a directory is for, when it is a node's directory; undefined otherwise. */
export function nodeDirOf(dir: string): string | undefined {
  return nodeDirMarkerOf(dir)?.node;
}

/** Where a bundle keeps the node material of its day (public: JWTs and keys): the held boot of a node whose cluster published none yet. */
export function bundledMaterialFile(layout: RootLayout, node: string): string {
  return join(layout.nodeDir(node), "material.json");
}

/** The bundled material, when this is a node's directory holding one whose format it knows; undefined otherwise. */
export function readBundledMaterial(layout: RootLayout, node: string): NodeMaterial | undefined {
  const text = readTextIfExists(bundledMaterialFile(layout, node));
  if (text === undefined) return undefined;
  try {
    const m = JSON.parse(text) as Partial<NodeMaterial> | null;
    return m?.format === "cotal.node-material/1" && Array.isArray(m.spaces) && typeof m.cluster === "object" ? (m as NodeMaterial) : undefined;
  } catch {
    return undefined;
  }
}
