import { mkdtempSync, mkdirSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { isCotalError } from "@cotal/core";
import { findRedisScript, probeRedis, redisNext } from "../src/connection.js";

// The redis-unreachable way out runs as printed from any directory (docs/refusals.md): an absolute
// script path, the URL's own port, and nothing that only works from the checkout's root.
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe("redisNext", () => {
  it("starts Redis on the URL's port with the script's absolute path", () => {
    expect(redisNext("redis://127.0.0.1:6390", "/opt/cotal/infra/redis.sh")).toMatch(/^REDIS_PORT=6390 bash \/opt\/cotal\/infra\/redis.sh start {3}#/);
    expect(redisNext("redis://localhost", "/opt/c/infra/redis.sh")).toMatch(/^REDIS_PORT=6379 bash /);
    expect(redisNext("redis://user:pw@[::1]:7000", "/a b/infra/redis.sh")).toMatch(/^REDIS_PORT=7000 bash '\/a b\/infra\/redis.sh' start/);
  });

  it("falls back to Debian's redis-server when no checkout is near, and only probes a remote host", () => {
    expect(redisNext("redis://127.0.0.1:6391", "")).toMatch(/^redis-server --bind 127.0.0.1 --port 6391 --dir \/tmp --daemonize yes/);
    const remote = redisNext("redis://:secret@cache.internal:6380", "/opt/c/infra/redis.sh");
    expect(remote).toMatch(/^redis-cli -h cache.internal -p 6380 ping/);
    expect(remote).not.toContain("secret");
    expect(redisNext("not a url")).toMatch(/^unset REDIS_URL/);
  });

  it("finds infra/redis.sh by walking up, and this checkout's from the module", () => {
    const root = realpathSync(mkdtempSync(join(tmpdir(), "redis-next-")));
    dirs.push(root);
    mkdirSync(join(root, "infra"));
    mkdirSync(join(root, "packages", "cli", "dist"), { recursive: true });
    writeFileSync(join(root, "infra", "redis.sh"), "");
    expect(findRedisScript(join(root, "packages", "cli", "dist"))).toBe(join(root, "infra", "redis.sh"));
    expect(findRedisScript(join(root, "packages"))).toBe(join(root, "infra", "redis.sh"));
    expect(findRedisScript("/")).toBeUndefined();
    expect(findRedisScript()).toMatch(/\/infra\/redis.sh$/);
  });

  it("the refusal carries it: a port nothing listens on", async () => {
    const err = await probeRedis("redis://127.0.0.1:1", 1_000).then(() => undefined, (e: unknown) => e);
    expect(isCotalError(err, "redis-unreachable")).toBe(true);
    expect((err as { next?: string }).next).toMatch(/^REDIS_PORT=1 bash \/\S+\/infra\/redis.sh start/);
  });
});
