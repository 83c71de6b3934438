import { type Guards } from "../guards.js";
import { within } from "../retry.js";
import { connectAsAccount } from "../broker/connect.js";
import { INVENTORY_BUCKET } from "../inventory/authority-store.js";
import type { AccountRecord } from "../root/records.js";

// docs/cluster.md "Verbs through any node": on a cluster root the control host asks every node's
// client URL at once and goes through the first, in node order, whose JetStream reads the record.

/**
 * How long the control host waits for one node to answer: the TCP connect and NATS handshake, then
 * one JetStream request for the record's bucket. Every node is asked at once, so choosing a node
 * takes at most this long (plus a grace for a socket that ignores its own timeout).
 */
export const NODE_ANSWER_MS = 3_000;

/** A node as the control host reached it (status: `broker.nodes[].reach`). */
export interface NodeReach {
  name: string;
  url: string;
  /** It completed the NATS handshake within the bound. */
  reachable: boolean;
  /** Its JetStream answered for the record's bucket (null: not reached, so not asked). */
  jetstream: boolean | null;
  /** Why not, when either is false. */
  why?: string;
  ms: number;
}

/** Asks one node; throws when it does not complete the handshake, else says whether its JetStream read the record's bucket. */
export type NodeProbe = (url: string, boundMs: number) => Promise<{ jetstream: boolean; why?: string }>;

/** Every node asked at once, each bounded by `boundMs`; the answers in the nodes' order. */
export async function reachNodes(nodes: readonly { name: string; url: string }[], probe: NodeProbe, boundMs: number = NODE_ANSWER_MS): Promise<NodeReach[]> {
  return Promise.all(
    nodes.map(async (n): Promise<NodeReach> => {
      const t0 = Date.now();
      try {
        const r = await within(probe(n.url, boundMs), boundMs + 250, `no answer within ${boundMs} ms`);
        return { name: n.name, url: n.url, reachable: true, jetstream: r.jetstream, ...(r.why ? { why: r.why } : {}), ms: Date.now() - t0 };
      } catch (err) {
        return { name: n.name, url: n.url, reachable: false, jetstream: null, why: (err as Error).message, ms: Date.now() - t0 };
      }
    }),
  );
}

/**
 * Pure: the nodes in the order a verb tries them. A node whose JetStream reads the record first (a
 * minority node answers clients but refuses every JetStream call: an operator expects the verb to go
 * through the majority), then one that only answered, then the unreachable; node order within each.
 * VERBS_FIRST_NODE_ONLY: the nodes' own order, node 1 first, whatever answered.
 */
export function rankNodes(reach: readonly NodeReach[], guards: Pick<Guards, "VERBS_FIRST_NODE_ONLY">): NodeReach[] {
  if (guards.VERBS_FIRST_NODE_ONLY) return [...reach];
  const score = (r: NodeReach): number => (r.jetstream === true ? 0 : r.reachable ? 1 : 2);
  return [...reach].sort((a, b) => score(a) - score(b)); // stable: node order within a score
}

/** Pure: the node a verb goes through (the first ranked, if it answered at all). */
export function chooseNode(reach: readonly NodeReach[], guards: Pick<Guards, "VERBS_FIRST_NODE_ONLY">): NodeReach | undefined {
  const first = rankNodes(reach, guards)[0];
  return first?.reachable ? first : undefined;
}

/** The default probe: a short-lived authority user (minted in memory) connects, asks `$JS.API.STREAM.INFO` of the record's bucket, closes. */
export function authorityProbe(authority: AccountRecord): NodeProbe {
  return async (url, boundMs) => {
    const t0 = Date.now();
    const nc = await connectAsAccount(url, authority, { name: "cotal reach", reconnect: false, timeoutMs: boundMs, ttlSeconds: 60 });
    const left = Math.max(200, boundMs - (Date.now() - t0));
    try {
      const m = await nc.request(`$JS.API.STREAM.INFO.KV_${INVENTORY_BUCKET}`, undefined, { timeout: left });
      const err = (JSON.parse(new TextDecoder().decode(m.data)) as { error?: { description?: string } }).error;
      return err ? { jetstream: false, why: `its JetStream refused the record: ${err.description ?? "error"}` } : { jetstream: true };
    } catch (err) {
      return { jetstream: false, why: `its JetStream did not answer for the record within ${left} ms (${(err as Error).message})` };
    } finally {
      await nc.close().catch(() => undefined);
    }
  };
}
