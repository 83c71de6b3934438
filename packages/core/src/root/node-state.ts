import { hostname } from "node:os";
import type { RootLayout } from "./layout.js";
import { readTextIfExists, writeJsonAtomic } from "./secret-files.js";

/**
 * What `cotal node run` last decided about its node (docs/cluster.md "cotal node"), written
 * atomically to nodes/<name>/agent.json on each change so `cotal status` can show it: `maintenance`
 * (no tenant admitted, with why and the way out), `serving` a generation, or `stale` (a node that
 * ran tenants before its record became unreadable keeps its last applied list), or `stopped` (by
 * `cotal down`: kept down until `cotal up`).
 */
export interface NodeAgentState {
  format: "cotal.node-agent/1";
  node: string;
  /** The agent's pid; status judges a dead one's file stale. */
  pid: number;
  /** The agent's host (its hostname): status judges the pid only on that host. Absent in files of older agents. */
  host?: string;
  state: "maintenance" | "serving" | "stale" | "stopped";
  /** maintenance: why the node admits no tenant. serving: what it runs, when a claim is pending. */
  reason?: string;
  next?: string;
  /** serving: the committed generation the node runs. */
  generation?: number;
  at: string;
}

export function writeNodeAgentState(layout: RootLayout, state: Omit<NodeAgentState, "format" | "at" | "host">): NodeAgentState {
  const rec: NodeAgentState = { format: "cotal.node-agent/1", ...state, host: hostname(), at: new Date().toISOString() };
  writeJsonAtomic(layout.nodeAgentStateFile(state.node), rec);
  return rec;
}

/** The file, or undefined when absent or unreadable (status shows no agent then). */
export function readNodeAgentState(layout: RootLayout, node: string): NodeAgentState | undefined {
  const text = readTextIfExists(layout.nodeAgentStateFile(node));
  if (text === undefined) return undefined;
  try {
    const s = JSON.parse(text) as NodeAgentState;
    return s.format === "cotal.node-agent/1" && ["maintenance", "serving", "stale", "stopped"].includes(s.state) ? s : undefined;
  } catch {
    return undefined;
  }
}
