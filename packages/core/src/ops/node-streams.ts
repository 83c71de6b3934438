import { readdirSync } from "node:fs";
import { join } from "node:path";
import type { NodeRuntime } from "../broker/runtime.js";
import { serverFeatures } from "../broker/server-features.js";
import { SystemClient, type JszAccount, type JszStream, type SystemUser } from "../broker/system-client.js";
import { readAccountDetails } from "../provision/template-check.js";
import { loadSpaceAccount } from "../root/account-store.js";
import { loadBrokerTrust } from "../root/broker-store.js";
import type { RootLayout } from "../root/layout.js";

// Does each cluster node serve the tenant streams it hosts (docs/cluster.md "Restarts")? A stream
// JetStream recovered from disk outside its meta-layer assignment (its account was unknown when the
// assignment was replayed) still reads back but answers no write. One JSZ read per node, against the
// tenant streams the node's own store holds, finds it.

/** A tenant stream a node lists but cannot serve. */
export interface StreamProblem {
  space: string;
  stream: string;
  /** unassigned: running outside its assignment (writes get no reply); no leader: assigned, nobody leads it; not running: in the node's store, not in its JetStream. */
  problem: "unassigned" | "no leader" | "not running";
}

/** One node's answer: its problems (none: every listed tenant stream is assigned and led), or why it could not be read. */
export type StreamCheck = { problems: StreamProblem[] } | { error: string };

export interface TenantAccount {
  name: string;
  publicKey: string;
}

/**
 * Pure: the tenant streams of one node that it does not serve: in its store (`stored`, by account)
 * but not in its JetStream (`details`, its JSZ), or listed there but not assigned or with no leader.
 * `groups` (JSZ `stream_raft_group`, 2.10.4+): a stream is assigned iff it names its group; before
 * that only a replicated stream shows it, by listing its peers (an unassigned R1 reads as assigned).
 */
export function streamProblems(details: ReadonlyMap<string, JszAccount>, tenants: readonly TenantAccount[], groups: boolean, stored: ReadonlyMap<string, readonly string[]> = new Map()): StreamProblem[] {
  const out: StreamProblem[] = [];
  for (const t of tenants) {
    const listed = details.get(t.publicKey)?.stream_detail ?? [];
    const names = new Set(listed.map((s) => s.name));
    for (const name of stored.get(t.publicKey) ?? []) if (!names.has(name)) out.push({ space: t.name, stream: name, problem: "not running" });
    for (const s of listed) {
      if (!assigned(s, groups)) out.push({ space: t.name, stream: s.name, problem: "unassigned" });
      else if (!s.cluster?.leader) out.push({ space: t.name, stream: s.name, problem: "no leader" });
    }
  }
  return out.sort((a, b) => (a.space === b.space ? (a.stream < b.stream ? -1 : 1) : a.space < b.space ? -1 : 1));
}

function assigned(s: JszStream, groups: boolean): boolean {
  if (groups) return typeof s.stream_raft_group === "string" && s.stream_raft_group !== "";
  const replicas = typeof s.config?.num_replicas === "number" ? s.config.num_replicas : 1;
  return replicas <= 1 || (s.cluster?.replicas?.length ?? 0) > 0;
}

/** "t1 KV_cotal_state_t1 unassigned, …" for a status line or a refusal, at most `max` named. */
export function describeProblems(problems: readonly StreamProblem[], max = 6): string {
  const named = problems.slice(0, max).map((p) => `${p.space} ${p.stream} ${p.problem}`);
  return `${named.join(", ")}${problems.length > max ? ` and ${problems.length - max} more` : ""}`;
}

/** The committed tenants with a record on disk (a tenant without one has nothing a node could list). */
export function tenantAccounts(layout: RootLayout, spaces: readonly string[]): TenantAccount[] {
  return spaces.flatMap((name) => {
    const rec = loadSpaceAccount(layout, name);
    return rec ? [{ name, publicKey: rec.publicKey }] : [];
  });
}

/**
 * The tenant streams a node's store holds, by account (`<store>/jetstream/<account>/streams/<name>`;
 * a name starting with "." is a deletion in progress). Read before the JSZ, so a stream created in
 * between is not reported missing.
 */
export function storedStreams(layout: RootLayout, node: string, tenants: readonly TenantAccount[]): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const t of tenants) {
    try {
      out.set(t.publicKey, readdirSync(join(layout.nodeStoreDir(node), "jetstream", t.publicKey, "streams")).filter((n) => !n.startsWith(".")));
    } catch {
      // no directory: this node hosts none of its streams
    }
  }
  return out;
}

/** One node's JSZ (accounts, streams, configs, groups) through a short-lived system user, judged against its store. */
export async function checkNodeStreams(layout: RootLayout, node: Pick<NodeRuntime, "name" | "url">, tenants: readonly TenantAccount[], serverVersion: string, timeoutMs = 5_000, system?: SystemUser): Promise<StreamCheck> {
  const groups = serverFeatures(serverVersion).jszStreamGroup;
  let client: SystemClient | undefined;
  try {
    const stored = storedStreams(layout, node.name, tenants);
    client = await SystemClient.connect(node.url, system ?? loadBrokerTrust(layout).system, { jsz: true, timeoutMs });
    const details = await readAccountDetails(client, tenants.map((t) => t.publicKey), { timeoutMs, raft: groups });
    return { problems: streamProblems(details, tenants, groups, stored) };
  } catch (err) {
    return { error: (err as Error).message };
  } finally {
    await client?.close();
  }
}

export const served = (c: StreamCheck | undefined): boolean => c !== undefined && "problems" in c && c.problems.length === 0;

/**
 * Until every node serves every tenant stream it lists, or `ms` passed: R3 groups elect their leaders
 * a few seconds after a node returns. Returns each node's last check.
 */
export async function waitStreamsServed(layout: RootLayout, nodes: readonly Pick<NodeRuntime, "name" | "url">[], tenants: readonly TenantAccount[], serverVersion: string, ms = 30_000, system?: SystemUser): Promise<Record<string, StreamCheck>> {
  const deadline = Date.now() + ms;
  for (;;) {
    const checks = Object.fromEntries(await Promise.all(nodes.map(async (n) => [n.name, await checkNodeStreams(layout, n, tenants, serverVersion, 5_000, system)] as const)));
    if (Object.values(checks).every(served) || Date.now() > deadline) return checks;
    await new Promise((r) => setTimeout(r, 500));
  }
}

/** "node n2: t1 KV_cotal_state_t1 unassigned; node n3: JSZ …" for the nodes whose check failed. */
export function describeChecks(checks: Readonly<Record<string, StreamCheck>>): string {
  return Object.entries(checks)
    .filter(([, c]) => !served(c))
    .map(([name, c]) => `node ${name}: ${"error" in c ? `its JetStream did not answer (${c.error})` : describeProblems(c.problems)}`)
    .join("; ");
}
