import { randomUUID } from "node:crypto";
import type { Guards } from "../guards.js";
import { RERUN, CotalError } from "../errors.js";
import type { MaterialKv } from "../broker/material-bucket.js";
import { INFO_PROBE_MS, sendsInfo } from "../broker/info-probe.js";
import { nodeClientHost, nodeElsewhere, type BrokerRuntime, type NodeRuntime } from "../broker/runtime.js";
import { serverFeatures } from "../broker/server-features.js";
import { SystemClient, type SystemUser } from "../broker/system-client.js";
import { nodeAsk, writeNodeAsk, type NodeAsk } from "../inventory/node-ask.js";
import { readAgentProofs, type AgentProof } from "../inventory/node-proofs.js";
import type { InventoryRecord } from "../inventory/record.js";
import type { ReloadVerdict } from "./reload.js";

// The writer's half of "The writer asks, the agent applies" (docs/cluster.md): a node on another host
// is never renamed from here; its agent applies the asked list and the writer counts its proof.

/** What the writer needs of its store to ask: the public bucket, the proofs bucket. */
export interface AskStore {
  materialKv(replicas?: number): MaterialKv;
  proofsKv(replicas?: number, opts?: { create?: boolean }): MaterialKv;
}

/** The nodes this writer leaves to their agents: those on another host (broker/runtime.ts `nodeElsewhere`, the rule that never signals them). */
export function askedNodes(nodes: readonly NodeRuntime[]): NodeRuntime[] {
  return nodes.filter(nodeElsewhere);
}

/**
 * Pure: what generation the promoted list is of. The claim's, when server.conf holds its staged bytes;
 * otherwise the committed one (a rollback, or `up` re-applying the record).
 */
export function askedGeneration(record: InventoryRecord | undefined, promotedDigest: string): { generation: number; claim?: string } {
  // No record yet: the seed's list, generation 1.
  if (!record) return { generation: 1 };
  const p = record.pending;
  if (p && p.stagedDigest === promotedDigest) return { generation: p.generation, claim: p.stagedDigest };
  return { generation: record.generation };
}

export interface AskPlan {
  store: AskStore;
  replicas: number | undefined;
  leaseId: string;
  fence: () => Promise<boolean>;
  record: InventoryRecord | undefined;
  promotedDigest: string;
  spaces: readonly string[];
  guards: Guards;
}

/** Publishes the ask under the writer's lease, after the node material (the agent renders from both). */
export async function publishAsk(nodes: readonly NodeRuntime[], p: AskPlan): Promise<NodeAsk> {
  const ask = nodeAsk({ id: randomUUID(), leaseId: p.leaseId, ...askedGeneration(p.record, p.promotedDigest), spaces: [...p.spaces], nodes: nodes.map((n) => n.name) });
  if (!(await p.fence())) {
    throw new CotalError("lease-lost", `the writer lease expired before it asked nodes ${ask.nodes.join(", ")} to apply; the claim stays for the next writer`, {
      next: `${RERUN}   # the resume table completes or rolls back the claim on every node`,
    });
  }
  await writeNodeAsk(p.store.materialKv(p.replicas), ask);
  return ask;
}

export interface AwaitOptions {
  store: AskStore;
  replicas: number | undefined;
  runtime: BrokerRuntime;
  /** The root's system user, for VARZ (2.11+). */
  system: SystemUser | undefined;
  timeoutMs: number;
  guards: Guards;
}

const POLL_MS = 100;

/**
 * Waits, bounded, for each asked node's proof naming the ask. A node that sends no INFO is unproven at
 * once (cut off or down). On 2.11+ a proof counts only when the node's VARZ `config_digest` is the one
 * its agent proved: the server itself confirms it runs the bytes its agent vouches for.
 */
export async function awaitAgentProofs(ask: NodeAsk, nodes: readonly NodeRuntime[], o: AwaitOptions): Promise<Map<string, { verdict: ReloadVerdict; digest: string }>> {
  const out = new Map<string, { verdict: ReloadVerdict; digest: string }>();
  await Promise.all(nodes.map(async (node) => out.set(node.name, await awaitOne(ask, node, o))));
  return out;
}

async function awaitOne(ask: NodeAsk, node: NodeRuntime, o: AwaitOptions): Promise<{ verdict: ReloadVerdict; digest: string }> {
  const t0 = Date.now();
  const host = nodeClientHost(node, o.runtime.host);
  const unproven = (why: string): { verdict: ReloadVerdict; digest: string } => ({ verdict: { outcome: "unproven", via: "request", logTail: why, ms: Date.now() - t0 }, digest: "" });
  if (!(await sendsInfo(node.port, host, INFO_PROBE_MS))) return unproven(`node ${node.name} on host ${host} sent no INFO on ${host}:${node.port} within ${INFO_PROBE_MS} ms (cut off or down); a node on another host is asked, never signalled, and its agent cannot answer while it is cut off`);
  const kv = o.store.proofsKv(o.replicas, { create: false });
  let proof: AgentProof | undefined;
  while (!proof && Date.now() - t0 < o.timeoutMs) {
    proof = (await readAgentProofs(kv, [node.name])).find((p) => p.ask === ask.id);
    if (!proof) await new Promise((r) => setTimeout(r, POLL_MS));
  }
  if (!proof) return unproven(`node ${node.name}'s agent (cotal node run --node ${node.name} on ${host}) did not answer the writer's ask within ${o.timeoutMs} ms: not running, or its node did not prove the list`);
  const checked = await varzCheck(node, proof, o);
  if (checked) return unproven(checked);
  const verdict: ReloadVerdict = { outcome: "reloaded", via: "request", line: `proven by its agent at ${proof.provenAt}${proof.serverConfigDigest ? `, VARZ config_digest ${proof.serverConfigDigest}` : ""}`, ms: Date.now() - t0, ...(proof.serverConfigDigest ? { serverConfigDigest: proof.serverConfigDigest } : {}) };
  return { verdict, digest: proof.configDigest };
}

/** On 2.11+: why the node's own digest disagrees with its agent's proof, or undefined when it agrees (or cannot tell: 2.9, 2.10). */
async function varzCheck(node: NodeRuntime, proof: AgentProof, o: AwaitOptions): Promise<string | undefined> {
  if (!serverFeatures(o.runtime.serverVersion).configDigest || o.guards.NODE_PROOF_ANY_DIGEST) return undefined;
  if (!proof.serverConfigDigest) return `node ${node.name}'s agent proved the list without the server's config digest, which nats-server ${o.runtime.serverVersion} reports`;
  if (!o.system) return `no system user here to ask node ${node.name}'s VARZ for its config digest`;
  let client: SystemClient | undefined;
  try {
    client = await SystemClient.connect(node.url, o.system, { timeoutMs: Math.min(o.timeoutMs, 5_000) });
    const seen = await client.configDigest(Math.min(o.timeoutMs, 5_000));
    return seen === proof.serverConfigDigest ? undefined : `node ${node.name}'s VARZ reports config_digest ${seen ?? "(none)"}, not the ${proof.serverConfigDigest} its agent proved`;
  } catch (err) {
    return `node ${node.name}'s VARZ could not be read (${(err as Error).message})`;
  } finally {
    await client?.close();
  }
}
