/**
 * A writer's ask (docs/cluster.md "The writer asks, the agent applies"): a writer that cannot rename a
 * node's config (the node is on another host) publishes, under its lease, the list it asks that node's
 * agent to run, in the public bucket beside the node material; the agent renders it there, applies it
 * while that writer's lease still holds, and answers with its proof naming the ask. A gone writer's ask
 * (its lease expired or released) is no instruction.
 */
import { GUARDS_ON, type Guards } from "../guards.js";
import type { MaterialKv } from "../broker/material-bucket.js";
import { jsonOf } from "./node-proofs.js";

/** The ask's key in the node material's bucket (`cotal_node_material`): one standing ask per root. */
export const ASK_KEY = "ask";
const FORMAT = "cotal.node-ask/1";

export interface NodeAsk {
  format: typeof FORMAT;
  /** Unique per reload: the proof that answers it names it. */
  id: string;
  /** The asking writer's lease: the ask stands while the lease key still holds this id. */
  leaseId: string;
  /** The generation the list is of: the claim's (with `claim`) or the committed one. */
  generation: number;
  /** The claim's staged digest when the list is the claim's. */
  claim?: string;
  /** The tenants the node is asked to run (their accounts are in the bucket, published before the ask). */
  spaces: string[];
  /** The nodes this writer leaves to their agents. */
  nodes: string[];
  at: string;
}

export function nodeAsk(a: Omit<NodeAsk, "format" | "at">, now = new Date()): NodeAsk {
  return { format: FORMAT, ...a, spaces: [...a.spaces], nodes: [...a.nodes], at: now.toISOString() };
}

const names = (v: unknown): v is string[] => Array.isArray(v) && v.every((s) => typeof s === "string" && s.length > 0);

/** Pure: a stored ask, or undefined for anything else (an unreadable ask asks nothing). */
export function parseNodeAsk(bytes: Uint8Array | undefined): NodeAsk | undefined {
  const a = jsonOf(bytes) as Partial<NodeAsk> | null | undefined;
  if (typeof a !== "object" || a === null || a.format !== FORMAT) return undefined;
  if (typeof a.id !== "string" || a.id === "" || typeof a.leaseId !== "string" || a.leaseId === "" || typeof a.at !== "string") return undefined;
  if (!Number.isSafeInteger(a.generation) || (a.generation as number) < 1 || !names(a.spaces) || !names(a.nodes)) return undefined;
  if (a.claim !== undefined && typeof a.claim !== "string") return undefined;
  return a as NodeAsk;
}

export async function writeNodeAsk(kv: MaterialKv, ask: NodeAsk): Promise<void> {
  await kv.put(ASK_KEY, new TextEncoder().encode(JSON.stringify(ask)));
}

export async function readNodeAsk(kv: MaterialKv): Promise<NodeAsk | undefined> {
  return parseNodeAsk(await kv.get(ASK_KEY));
}

/**
 * Pure: does this ask instruct node `node` now? Only an ask naming the node whose writer still holds
 * the lease it was made under (`leaseHolds`, read by the agent just before): a writer that is gone
 * left no instruction, and the agent falls back to its own rule (saga/node-decision.ts).
 */
export function askStands(ask: NodeAsk | undefined, node: string, leaseHolds: boolean, guards: Guards = GUARDS_ON): ask is NodeAsk {
  if (!ask || !ask.nodes.includes(node)) return false;
  return leaseHolds || guards.NODE_ASK_UNFENCED;
}
