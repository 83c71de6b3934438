import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { describe, expect, it } from "vitest";
import { BOARD_CSP, boardError, localOnly, queueDisplayName, scrubBody } from "../src/bull-board.js";

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

  it("names a queue by its verb and root, not by the root's hash", () => {
    expect(queueDisplayName("space-add", "/srv/cotal")).toBe("cotal space-add (root /srv/cotal)");
  });
});
