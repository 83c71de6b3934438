// nats-server PR #8609 at scale: a tenant connected through a 1,000-space queued onboarding (several
// reloads) is never bounced on a server with the fix. Skipped, with the reason printed, on older ones
// (server-versions.test.ts measures their bounce on a 100-space batch).
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { harnessTeardown, SurvivorWatcher } from "@cotal/harness";
import { FEATURE_SINCE } from "@cotal/core/broker";
import { reloadCount } from "../fixtures/broker-log.js";
import { disposeJobsFixtures, jobsFixtures, jobsRoot, startWorker, tenantNames } from "../fixtures/jobs.js";
import { parseJson } from "../fixtures/live-root.js";
import { cell } from "../fixtures/matrix.js";
import { liveServer, skipReason } from "../fixtures/server-version.js";
import { credsText } from "../fixtures/tenants.js";
import { VERSION_DEPENDENT } from "../fixtures/tags.js";

const { workers } = jobsFixtures;
afterEach(disposeJobsFixtures);
afterAll(harnessTeardown);

const fixed = liveServer.reloadKeepsJwtClients;
if (!fixed) console.log(`[survivors-onboarding] ${skipReason("reloadKeepsJwtClients", FEATURE_SINCE.reloadKeepsJwtClients)}`);

describe(`nats-server ${liveServer.version}: survivors of a 1,000-space queued onboarding`, VERSION_DEPENDENT, () => {
  it.skipIf(!fixed)("a tenant's client connected through a 1,000-space queued onboarding sees 0 disconnects", () =>
    cell("survivor disconnects during 1,000-space queued onboarding (fixed)", async (m) => {
      const { r, up, redis } = await jobsRoot("cotal-survivors-");
      const watcher = await SurvivorWatcher.start({ url: up.url, creds: await credsText(r, "alpha", "survivor") });

      const names = tenantNames(1000, "o");
      const file = join(r.root, "..", "tenants.txt");
      writeFileSync(file, `${names.join("\n")}\n`);
      const w1 = startWorker("cli", { root: r.root, redisUrl: redis.url, args: ["--concurrency", "500", "--batch-size", "250", "--batch-wait", "500"] });
      const w2 = startWorker("cli", { root: r.root, redisUrl: redis.url, args: ["--concurrency", "500", "--batch-size", "250", "--batch-wait", "500"] });
      workers.push(w1, w2);
      await Promise.all([w1.ready(), w2.ready()]);
      const before = reloadCount(r.layout);
      const add = await r.cotal(["space", "add", "--from", file, "--queue", "--json"], { env: { REDIS_URL: redis.url }, timeoutMs: 150_000 });
      expect(add.code, `${add.stderr}\n--- w1\n${w1.log()}\n--- w2\n${w2.log()}`).toBe(0);
      expect(parseJson<{ completed: number }>(add).completed).toBe(1000);
      const reloads = reloadCount(r.layout) - before;
      await new Promise((res) => setTimeout(res, 300));
      const drops = watcher.count("disconnect");
      m.notes = [`nats-server ${liveServer.version}: ${drops} disconnect(s) of a connected tenant across 1,000 queued adds (${reloads} reloads)`];
      console.log(`[survivors-onboarding] ${m.notes[0]}`);
      // positive control: the onboarding really reloaded the broker under the watcher, several times
      expect(reloads).toBeGreaterThanOrEqual(4);
      expect(drops).toBe(0);
      await watcher.connection.flush();
      // positive control: a watcher does see the drop when the broker closes it (its space removed)
      const gone = names[0] as string;
      const oc = await r.cotal(["space", "creds", gone, "--user", "gone", "--json"]);
      expect(oc.code, oc.stderr).toBe(0);
      const removed = await SurvivorWatcher.start({ url: up.url, creds: readFileSync(parseJson<{ path: string }>(oc).path, "utf8") });
      expect((await r.cotal(["space", "rm", gone, "--yes"])).code).toBe(0);
      await removed.waitFor("disconnect", { timeoutMs: 10_000 });
      expect(watcher.count("disconnect")).toBe(0);
      await Promise.all([watcher.stop(), removed.stop()]);
    }));
});
