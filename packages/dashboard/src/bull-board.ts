import { createBullBoard } from "@bull-board/api";
import { BullMQAdapter } from "@bull-board/api/bullMQAdapter";
import { ExpressAdapter } from "@bull-board/express";
import { JOB_TYPES, QUEUE_PREFIX, queueNameFor, rootKeyFor } from "@cotal/jobs";
import { Queue } from "bullmq";
import { Redis } from "ioredis";
import type { Router } from "express";
import type { Guards } from "@cotal/saga";

/**
 * One long-lived client for every queue of the board: it keeps reconnecting, so the dashboard
 * outlives a Redis restart; a command waits through one reconnect at most, then fails (the board
 * shows the error). Owning it lets `close` end it even while Redis is away, which BullMQ's own
 * connection would wait on forever.
 */
function boardClient(url: string): Redis {
  const client = new Redis(url, { maxRetriesPerRequest: 1, connectTimeout: 2_000, retryStrategy: (n: number) => Math.min(500 * n, 5_000) });
  client.on("error", () => undefined); // Redis being away is reported on the tenant page, not as a crash
  return client;
}

/**
 * Bull Board over this root's queues (one per job type, as packages/jobs names them), read-only
 * always: its UI hides every action, and its API refuses one even if a write got past the server's guard.
 */
export function bullBoardFor(opts: { root: string; redisUrl: string; basePath: string; guards: Guards }): { router: Router; redisReady(): boolean; close(): Promise<void> } {
  const rootKey = rootKeyFor(opts.root);
  const client = boardClient(opts.redisUrl);
  const queues = JOB_TYPES.map((type) => {
    const q = new Queue(queueNameFor(type, rootKey), { connection: client, prefix: QUEUE_PREFIX });
    q.on("error", () => undefined);
    return { type, q };
  });
  const adapter = new ExpressAdapter().setBasePath(opts.basePath);
  const readOnlyMode = !opts.guards.DASHBOARD_WRITES; // only the ablation switch lifts it
  createBullBoard({
    queues: queues.map(({ type, q }) => new BullMQAdapter(q, { readOnlyMode, displayName: type, description: `${QUEUE_PREFIX}:${q.name}` })),
    serverAdapter: adapter,
    options: { uiConfig: { boardTitle: "cotal queues" } },
  });
  return {
    router: adapter.getRouter() as Router,
    redisReady: () => client.status === "ready",
    close: async () => {
      // A queue still waiting for its first connection never settles its close: give it a second.
      const closed = Promise.all(queues.map(({ q }) => q.close().catch(() => undefined)));
      await Promise.race([closed, new Promise((r) => setTimeout(r, 1_000).unref())]);
      client.disconnect();
    },
  };
}
