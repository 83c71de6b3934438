import { createBullBoard } from "@bull-board/api";
import { BullMQAdapter } from "@bull-board/api/bullMQAdapter";
import type { ControllerHandlerReturnType } from "@bull-board/api/typings/app";
import { ExpressAdapter } from "@bull-board/express";
import { JOB_TYPES, QUEUE_PREFIX, queueNameFor, rootKeyFor } from "@cotal/jobs";
import { redactSeeds } from "@cotal/core";
import { type Guards } from "@cotal/core/light";
import { Queue } from "bullmq";
import express, { type NextFunction, type Request, type Response, type Router } from "express";
import { Redis } from "ioredis";
import { queueDisplayName, queueMenuName } from "./board-names.js";

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
 * Bull Board's page may load nothing from another host (its template links Google Fonts): the
 * CSP keeps the browser to this origin, and {@link localOnly} takes the link out so nothing is even tried.
 */
export const BOARD_CSP = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; connect-src 'self'; base-uri 'self'; form-action 'none'; frame-ancestors 'none'";

/** Pure: an HTML page without any `<link>` or `<script>` that names another host (`http:`, `https:` or `//`). */
export function localOnly(page: string): string {
  return page.replace(/<(link|script)\b[^>]*\b(?:href|src)\s*=\s*["']?(?:https?:)?\/\/[^>]*>(?:\s*<\/script>)?/gi, "");
}

/** Pure: a board API answer without the jobs' stack traces (a failed job keeps its reason) and without a seed. */
export function scrubBody<T>(body: T): T {
  return JSON.parse(redactSeeds(JSON.stringify(body, (k, v: unknown) => (k === "stacktrace" && Array.isArray(v) ? [] : v)))) as T;
}

/** The board's API error: its message, never a stack (Bull Board adds one when NODE_ENV=development). */
export function boardError(err: Error): ControllerHandlerReturnType {
  return { status: 500, body: { error: "ERRORS.INTERNAL_SERVER_ERROR", message: redactSeeds(err.message) } };
}

/**
 * BullMQ's adapter under a readable name. Bull Board keys a queue, builds its side menu and its
 * `/queue/<name>` routes from `getName()` (api/dist/queuesApi.js, ui's menu tree), which is the
 * Redis name `space-add.<root hash>` by default; the adapter reads Redis through the Queue object
 * itself, so the name workers and enqueuers use (packages/jobs names.ts) is unchanged.
 */
export class NamedQueueAdapter extends BullMQAdapter {
  readonly #name: string;
  constructor(queue: Queue, name: string, options: ConstructorParameters<typeof BullMQAdapter>[1]) {
    super(queue, options);
    this.#name = name;
  }
  override getName(): string {
    return this.#name;
  }
}

/** Renders the board's page through {@link localOnly} and sets the CSP on everything the board answers. */
function localPage(_req: Request, res: Response, next: NextFunction): void {
  res.set("content-security-policy", BOARD_CSP);
  const render = res.render.bind(res);
  res.render = ((view: string, options?: object) =>
    render(view, options ?? {}, (err: Error | null, page?: string) => (err ? next(err) : void res.type("html").send(localOnly(page ?? ""))))) as typeof res.render;
  next();
}

/** The board's adapter per queue: named by its verb (menu, URL), titled with the root, read-only unless the ablation switch says otherwise. */
export function boardAdapters(queues: readonly { type: string; q: Queue }[], root: string, readOnlyMode: boolean): NamedQueueAdapter[] {
  return queues.map(({ type, q }) => new NamedQueueAdapter(q, queueMenuName(type), { readOnlyMode, displayName: queueDisplayName(type, root), description: `Redis keys ${QUEUE_PREFIX}:${q.name}:*` }));
}

/**
 * Bull Board over this root's queues (one per job type, as packages/jobs names them), read-only
 * always: its UI hides every action, and its API refuses one even if a write got past the server's
 * guard. `tenantsHref` is the way back to the tenants page from the board's header (relative to its
 * `<base href>`, the board's own path).
 */
export function bullBoardFor(opts: { root: string; redisUrl: string; basePath: string; guards: Guards; tenantsHref?: string }): { router: Router; redisReady(): boolean; close(): Promise<void> } {
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
    queues: boardAdapters(queues, opts.root, readOnlyMode),
    serverAdapter: adapter,
    options: {
      uiConfig: { boardTitle: "cotal queues", hideDocsLink: true, miscLinks: [{ text: "Tenants (cotal)", url: opts.tenantsHref ?? "../tenants" }], environment: { label: readOnlyMode ? "read-only" : "WRITES ON (test switch)", color: readOnlyMode ? "#444" : "#c00" } },
      handlerHooks: { after: (_ctx, result) => scrubBody(result) },
    },
  });
  adapter.setErrorHandler(boardError); // after createBullBoard, which sets its own
  const router = express.Router();
  router.use(localPage);
  const board = adapter.getRouter() as express.Express;
  board.disable("x-powered-by");
  router.use(board);
  return {
    router,
    redisReady: () => client.status === "ready",
    close: async () => {
      // A queue still waiting for its first connection never settles its close: give it a second.
      const closed = Promise.all(queues.map(({ q }) => q.close().catch(() => undefined)));
      await Promise.race([closed, new Promise((r) => setTimeout(r, 1_000).unref())]);
      client.disconnect();
    },
  };
}
