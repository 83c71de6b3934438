import type { ConnectionOptions } from "bullmq";
import { Redis } from "ioredis";
import { CotalError } from "@cotal/core/errors";
import { within } from "@cotal/core/light";

export const DEFAULT_REDIS_URL = "redis://127.0.0.1:6379";

/** The Redis URL an entry's environment names (REDIS_URL), else the local default. */
export function redisUrlFrom(env: NodeJS.ProcessEnv): string {
  return env.REDIS_URL?.trim() || DEFAULT_REDIS_URL;
}

/** Where a URL points, without credentials, for messages. */
export function redactRedisUrl(url: string): string {
  try {
    const u = new URL(url);
    u.username = "";
    u.password = "";
    return u.toString().replace(/\/$/, "");
  } catch {
    return "(unparseable REDIS_URL)";
  }
}

export function redisUnreachable(url: string, cause: unknown): CotalError {
  return new CotalError("redis-unreachable", `cannot reach Redis at ${redactRedisUrl(url)}: ${(cause as Error)?.message ?? String(cause)}`, {
    next: "bash infra/redis.sh start   # or point REDIS_URL at a running Redis (redis://host:port)",
    details: { url: redactRedisUrl(url) },
    cause,
  });
}

/**
 * BullMQ connection options. Workers block on Redis and must never give up a command
 * (`maxRetriesPerRequest: null`, as BullMQ requires); producers fail fast instead.
 */
export function connectionOptions(url: string, role: "worker" | "producer"): ConnectionOptions {
  return role === "worker"
    ? { url, maxRetriesPerRequest: null, enableReadyCheck: true }
    : { url, maxRetriesPerRequest: 2, enableOfflineQueue: true, connectTimeout: 3_000, retryStrategy: (n: number) => (n > 3 ? null : 200 * n) };
}

/**
 * One PING with no retries: the clear "Redis is not there" error (and its next step) before any
 * queue is built, instead of BullMQ retrying forever in the background.
 */
export async function probeRedis(url: string, timeoutMs = 3_000): Promise<void> {
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: timeoutMs, retryStrategy: () => null, enableOfflineQueue: false });
  let cause: unknown; // ioredis rejects with "Connection is closed"; the socket error says why
  client.on("error", (e: unknown) => (cause ??= e));
  // connectTimeout covers the TCP connect only: a stopped (SIGSTOP) Redis accepts it and never answers
  // the ready check or the PING, so the whole probe is bounded here (docs/refusals.md "Bounded time").
  try {
    await within(client.connect().then(() => client.ping()), timeoutMs, `no answer within ${timeoutMs} ms (a stopped or overloaded Redis)`);
  } catch (err) {
    throw redisUnreachable(url, cause ?? err);
  } finally {
    client.disconnect();
  }
}

/** A plain client for reads the job layer makes itself (job hashes, FLUSH-proof tracking). */
export async function openRedis(url: string): Promise<Redis> {
  await probeRedis(url);
  const client = new Redis(url, { maxRetriesPerRequest: 2, connectTimeout: 3_000 });
  client.on("error", () => undefined);
  return client;
}
