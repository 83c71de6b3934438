import { createConnection } from "node:net";
import { nodeClientHost, nodeElsewhere, type NodeRuntime } from "./runtime.js";

/** How long a node may take to send its INFO line before it counts as not answering (stopped, cut off, down). */
export const INFO_PROBE_MS = 2_000;

/** Does a server on host:port send its INFO line within `ms`? Our own socket, always destroyed. */
export function sendsInfo(port: number, host: string, ms: number = INFO_PROBE_MS): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = createConnection({ host, port });
    const done = (ok: boolean): void => {
      clearTimeout(timer);
      sock.destroy();
      resolve(ok);
    };
    const timer = setTimeout(() => done(false), ms);
    let seen = "";
    sock.on("data", (b: Buffer) => {
      seen += b.toString("latin1");
      if (seen.startsWith("INFO ")) done(true);
    });
    sock.on("error", () => done(false));
    sock.on("close", () => done(false));
  });
}

/**
 * The recorded nodes on other hosts that do not answer (docs/cluster.md "Liveness by reachability"):
 * a node elsewhere runs if it sends its INFO line, whatever its recorded pid says here. Asked at once.
 */
export async function silentElsewhere(nodes: readonly NodeRuntime[], fallbackHost: string, ms: number = INFO_PROBE_MS): Promise<NodeRuntime[]> {
  const elsewhere = nodes.filter(nodeElsewhere);
  const answers = await Promise.all(elsewhere.map((n) => sendsInfo(n.port, nodeClientHost(n, fallbackHost), ms)));
  return elsewhere.filter((_, i) => !answers[i]);
}
