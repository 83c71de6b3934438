import { jetstreamManager } from "@nats-io/jetstream";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { harnessTeardown } from "@cotal/harness";
import { connectAsAccount } from "@cotal/core/broker";
import { templateStreamNames } from "@cotal/core/provision";
import { loadSpaceAccount } from "@cotal/core/root";
import type { LiveRoot } from "../fixtures/live-root.js";
import { dropStreams } from "../fixtures/online.js";
import { ok, upJson } from "../fixtures/space-data.js";
import { disposeLiveRoots, trackedRoot } from "../fixtures/tenants.js";
import { VERSION_DEPENDENT } from "../fixtures/tags.js";

// Issue 15: a cold `up` re-checks every space's template with one paged JSZ read (a JSZ-only system
// user) and provisions only the spaces whose streams or buckets are missing or differ; the others
// get no provisioner connection (at 10,000 tenants each one made the server build that account).

afterEach(disposeLiveRoots);
afterAll(async () => {
  await harnessTeardown();
});

const SPACES = ["alpha", "beta", "gamma", "delta", "epsilon"];

async function streamsOf(r: LiveRoot, url: string, space: string): Promise<Map<string, { description?: string }>> {
  const account = loadSpaceAccount(r.layout, space);
  if (!account) throw new Error(`no record for ${space}`);
  const nc = await connectAsAccount(url, account, { name: "test-list-streams", reconnect: false });
  try {
    const jsm = await jetstreamManager(nc);
    const out = new Map<string, { description?: string }>();
    for await (const si of jsm.streams.list()) out.set(si.config.name, si.config.description ? { description: si.config.description } : {});
    return out;
  } finally {
    await nc.close();
  }
}

async function retag(r: LiveRoot, url: string, space: string, stream: string): Promise<void> {
  const account = loadSpaceAccount(r.layout, space);
  if (!account) throw new Error(`no record for ${space}`);
  const nc = await connectAsAccount(url, account, { name: "test-retag", reconnect: false });
  try {
    await (await jetstreamManager(nc)).streams.update(stream, { description: "changed behind cotal's back" });
  } finally {
    await nc.close();
  }
}

describe("cold up's provisioning re-check", () => {
  it("re-provisions exactly the spaces whose template is gone or differs; the others get none", VERSION_DEPENDENT, async () => {
    const r = await trackedRoot("cotal-reprov-");
    const first = await upJson(r, ["--space", "alpha"]);
    ok(await r.cotal(["space", "add", ...SPACES.slice(1)]));

    // Positive control first: with every template in place a cold up provisions nothing.
    ok(await r.cotal(["down"]));
    const clean = await upJson(r);
    expect(clean.spaces).toEqual([...SPACES].sort());
    expect(clean.provisioned).toEqual([]);

    const [events, stateKv, presenceKv] = templateStreamNames("gamma");
    await dropStreams(r, clean.url, "gamma", [events!]); // gamma loses its event stream
    await dropStreams(r, clean.url, "epsilon", [templateStreamNames("epsilon")[2]!]); // epsilon its presence bucket
    await retag(r, clean.url, "delta", templateStreamNames("delta")[0]!); // delta's stream config drifts
    expect((await streamsOf(r, clean.url, "gamma")).has(events!)).toBe(false);

    ok(await r.cotal(["down"]));
    const again = await upJson(r);
    expect(again.provisioned.map((p) => p.space).sort()).toEqual(["delta", "epsilon", "gamma"]);

    // Each is whole again, delta's config back to the template's; the untouched ones are as they were.
    const gamma = await streamsOf(r, again.url, "gamma");
    expect([...gamma.keys()].sort()).toEqual([events!, stateKv!, presenceKv!].sort());
    expect((await streamsOf(r, again.url, "delta")).get(templateStreamNames("delta")[0]!)?.description).toBe("events of space delta");
    expect((await streamsOf(r, again.url, "epsilon")).has(templateStreamNames("epsilon")[2]!)).toBe(true);
    for (const s of ["alpha", "beta"]) expect((await streamsOf(r, again.url, s)).size).toBe(3);
    expect(first.provisioned.map((p) => p.space)).toEqual(["alpha"]);
  });

  it("without the system signing seed (a --single-space root) the re-check falls back to provisioning every space", async () => {
    const r = await trackedRoot("cotal-reprov-single-");
    const first = await upJson(r, ["--space", "solo", "--single-space"]);
    expect(first.multiSpace).toBe(false);
    ok(await r.cotal(["down"]));
    const again = await upJson(r);
    // No system user can be minted for the JSZ read, so the space is provisioned (idempotently) as before.
    expect(again.provisioned.map((p) => p.space)).toEqual(["solo"]);
    expect((await streamsOf(r, again.url, "solo")).size).toBe(3);
  });
});
