import { createHash, randomBytes } from "node:crypto";
import { existsSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect, credsAuthenticator, type NatsConnection } from "@nats-io/transport-node";

// What a tenant (or an operator holding a creds file) observes from the outside.

export async function connectWith(url: string, creds: string, timeoutMs = 3_000): Promise<NatsConnection> {
  return connect({ servers: url, authenticator: credsAuthenticator(new TextEncoder().encode(creds)), reconnect: false, timeout: timeoutMs });
}

/** undefined when it connects, else the client's error text. */
export async function connectError(url: string, creds: string): Promise<string | undefined> {
  try {
    await (await connectWith(url, creds)).close();
    return undefined;
  } catch (e) {
    return (e as Error).message;
  }
}

/** The space's template streams a provisioned space has (README: streams and buckets per space). */
export const templateStreams = (space: string): string[] => [`cotal_events_${space}`, `KV_cotal_state_${space}`, `KV_cotal_presence_${space}`];

/** Stream name → message count, for the streams the cred's account sees. */
export async function streamCounts(url: string, creds: string): Promise<Record<string, number>> {
  const nc = await connectWith(url, creds);
  try {
    const jsm = await jetstreamManager(nc);
    const out: Record<string, number> = {};
    for await (const s of jsm.streams.list()) out[s.config.name] = s.state.messages;
    return out;
  } finally {
    await nc.close();
  }
}

export async function publishEvents(url: string, creds: string, space: string, count: number, size: number): Promise<void> {
  const nc = await connectWith(url, creds);
  try {
    const js = jetstream(nc);
    // random bytes: the snapshot is s2-compressed, so a uniform payload would make it instant
    const body = new Uint8Array(randomBytes(size));
    const inflight: Promise<unknown>[] = [];
    for (let i = 0; i < count; i++) {
      inflight.push(js.publish(`cotal.${space}.events.e${i % 7}`, body));
      if (inflight.length >= 64) await Promise.all(inflight.splice(0));
    }
    await Promise.all(inflight);
  } finally {
    await nc.close();
  }
}

/**
 * A published manifest must describe a complete artifact: every listed file present with its size
 * and sha256, and the events stream recorded with every message the space held (issue 12 item 10).
 */
export function manifestProblem(dir: string, space: string, expectedEvents: number): string | undefined {
  const path = join(dir, "manifest.json");
  if (!existsSync(path)) return "no manifest";
  let m: { files?: { path: string; size: number; sha256: string }[]; streams?: { name: string; state?: { messages?: number } }[] };
  try {
    m = JSON.parse(readFileSync(path, "utf8")) as typeof m;
  } catch (e) {
    return `manifest.json unreadable: ${(e as Error).message}`;
  }
  for (const f of m.files ?? []) {
    const p = join(dir, f.path);
    if (!existsSync(p)) return `manifest lists ${f.path}, which is missing`;
    const size = statSync(p).size;
    if (size !== f.size) return `manifest says ${f.path} is ${f.size} bytes, it is ${size}`;
    const sha = createHash("sha256").update(readFileSync(p)).digest("hex");
    if (sha !== f.sha256) return `sha256 of ${f.path} differs from the manifest`;
  }
  const events = m.streams?.find((s) => s.name === `cotal_events_${space}`);
  if (!events) return `manifest has no cotal_events_${space}`;
  if (events.state?.messages !== expectedEvents) return `manifest records ${events.state?.messages} events, the space held ${expectedEvents}`;
  return undefined;
}
