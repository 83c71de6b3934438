import type { ConnectionOptions } from "bullmq";
import { Redis } from "ioredis";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { CotalError, shellWord } from "@cotal/core/errors";
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

/** The checkout's infra/redis.sh above `from` (the module's directory), if this cotal runs from one. */
export function findRedisScript(from: string = dirname(fileURLToPath(import.meta.url))): string | undefined {
  for (let dir = from, up = 0; up < 8; dir = dirname(dir), up++) {
    const script = join(dir, "infra", "redis.sh");
    if (existsSync(script)) return script;
    if (dirname(dir) === dir) break;
  }
  return undefined;
}

/**
 * The way out of `redis-unreachable`, runnable as printed from any directory (docs/refusals.md): a
 * loopback URL starts Redis on its port with the checkout's script (absolute path), or Debian's
 * redis-server when no checkout is near; any other host can only be asked whether it answers.
 */
export function redisNext(url: string, script: string = findRedisScript() ?? ""): string {
  let host = "127.0.0.1";
  let port = "6379";
  try {
    const u = new URL(url);
    host = u.hostname.replace(/^\[|\]$/g, "") || host;
    port = u.port || port;
  } catch {
    return "unset REDIS_URL   # it must look like redis://host:port; unset, cotal uses redis://127.0.0.1:6379";
  }
  if (!/^(127\.\d+\.\d+\.\d+|localhost|::1)$/.test(host)) return `redis-cli -h ${shellWord(host)} -p ${port} ping   # that Redis must answer PONG, or point REDIS_URL at one that does`;
  if (script) return `REDIS_PORT=${port} bash ${shellWord(script)} start   # or point REDIS_URL at a running Redis`;
  return `redis-server --bind 127.0.0.1 --port ${port} --dir /tmp --daemonize yes   # or point REDIS_URL at a running Redis`;
}

export function redisUnreachable(url: string, cause: unknown): CotalError {
  return new CotalError("redis-unreachable", `cannot reach Redis at ${redactRedisUrl(url)}: ${(cause as Error)?.message ?? String(cause)}`, {
    next: redisNext(url),
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
