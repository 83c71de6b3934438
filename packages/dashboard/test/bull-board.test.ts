import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { describe, expect, it } from "vitest";
import type { Queue } from "bullmq";
import { JOB_TYPES, queueNameFor } from "@cotal/jobs";
import { boardQueueHref, queueDisplayName, queueMenuName } from "../src/board-names.js";
import { BOARD_CSP, boardAdapters, boardError, localOnly, scrubBody } from "../src/bull-board.js";

// Bull Board's own page template, as the installed version ships it
const require = createRequire(import.meta.url);
const api = require.resolve("@bull-board/api"); // <api>/dist/index.js
const ui = dirname(createRequire(api).resolve("@bull-board/ui/package.json"));
const TEMPLATE = readFileSync(join(ui, "dist", "index.ejs"), "utf8");

describe("Bull Board as the dashboard serves it", () => {
  it("its shipped page links a font host; served, it names no other host and keeps its own assets", () => {
    expect(TEMPLATE).toMatch(/https:\/\/fonts\.googleapis\.com/); // the control: what is taken out is there
    const page = localOnly(TEMPLATE);
    expect(page).not.toMatch(/<(link|script)[^>]*(href|src)=["']?(https?:)?\/\//i);
    expect(page).toMatch(/<link href="static\/css\/main\.[0-9a-f]+\.css" rel="stylesheet">/);
    expect(page).toMatch(/<script defer src="static\/js\/main\.[0-9a-f]+\.js"><\/script>/);
    expect(localOnly(`<script src="//cdn.example/x.js"></script><link rel=preconnect href=https://fonts.gstatic.com>`)).toBe("");
    expect(BOARD_CSP).toMatch(/^default-src 'self';/);
  });

  it("answers without a job's stack trace or a seed, and an API error without a stack", () => {
    const seed = `SUA${"A".repeat(55)}`;
    const body = { queues: [{ jobs: [{ id: "1", failedReason: "boom", stacktrace: ["Error: boom\n    at run (/x.js:1:2)"], data: { seed } }] }], job: { stacktrace: ["at y"] } };
    const out = scrubBody(body);
    expect(out.queues[0]?.jobs[0]?.stacktrace).toEqual([]);
    expect(out.queues[0]?.jobs[0]?.failedReason).toBe("boom");
    expect(out.job.stacktrace).toEqual([]);
    expect(JSON.stringify(out)).not.toContain(seed);
    const err = new Error("redis went away");
    expect(boardError(err)).toEqual({ status: 500, body: { error: "ERRORS.INTERNAL_SERVER_ERROR", message: "redis went away" } });
    expect(JSON.stringify(boardError(err))).not.toContain("at ");
  });

  it("names a queue by its verb and root, not by the root's hash, and links to its page", () => {
    expect(queueMenuName("space-backup")).toBe("space backup");
    expect(queueMenuName("space-rotate-key")).toBe("space rotate-key");
    expect(queueDisplayName("space-add", "/srv/cotal")).toBe("space add (root /srv/cotal)");
    expect(boardQueueHref("space-rm", "failed")).toBe("queues/queue/space%20rm?status=failed");
    expect(boardQueueHref("space-add")).toBe("queues/queue/space%20add");
  });

  it("keys each queue by its readable name (Bull Board's menu, header and routes) while the adapter reads the Redis name", () => {
    const hash = "ab".repeat(32);
    // a BullMQ queue as the adapter checks it (its name and its library's version), no Redis needed
    const queues = JOB_TYPES.map((type) => ({ type, q: { name: queueNameFor(type, hash), metaValues: { version: "bullmq:6" } } as unknown as Queue }));
    const adapters = boardAdapters(queues, "/srv/cotal", true);
    expect(adapters.map((a) => a.getName()).slice(0, 5)).toEqual(["space add", "space rm", "space backup", "space restore", "space revoke"]);
    expect(adapters.map((a) => a.getName())).toEqual(JOB_TYPES.map((t) => `space ${t.slice("space-".length)}`)); // as the CLI spells the verb
    expect(adapters.map((a) => a.getDisplayName())).toEqual(JOB_TYPES.map((t) => `${t.replace("-", " ")} (root /srv/cotal)`));
    expect(adapters.map((a) => a.getQueueName())).toEqual(JOB_TYPES.map((t) => `${t}.${hash}`)); // Redis keeps the workers' names
    for (const a of adapters) expect([a.getName(), a.getDisplayName()].join(" ")).not.toContain(hash);
    expect(adapters.every((a) => a.readOnlyMode && !a.allowRetries)).toBe(true);
  });
});
