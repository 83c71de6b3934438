import { afterAll, afterEach, describe, expect, it } from "vitest";
import { Kvm } from "@nats-io/kv";
import { harnessTeardown } from "@cotal/harness";
import { templateStreamNames } from "@cotal/core/provision";
import { parseJson } from "../fixtures/live-root.js";
import { connectCreds } from "../fixtures/nats.js";
import { runPrinted, refusedWith } from "../fixtures/printed.js";
import { ok, upJson } from "../fixtures/space-data.js";
import { credsText, disposeLiveRoots, trackedRoot } from "../fixtures/tenants.js";

// Issue 31: `space info` is read-only; it shows a space's limits against what the server counts,
// on a running broker, and the limits alone (exit 0) on a stopped one.

interface Row {
  field: string;
  limit: number | null;
  used: number | null;
  percent: number | null;
}
interface InfoDoc {
  space: string;
  state: string;
  publicKey: string;
  limits: Row[];
  usage: { read: boolean; reason?: string };
  creds: { user: string; path: string }[];
  backups: { reachable: boolean; error?: string };
}

afterEach(disposeLiveRoots);
afterAll(async () => {
  await harnessTeardown();
});

const row = (d: InfoDoc, field: string): Row => d.limits.find((r) => r.field === field) as Row;

describe("space info", () => {
  it("limits against usage with a tenant connected; unknown refused with a runnable next; a stopped broker keeps the limits", async () => {
    const r = await trackedRoot("cotal-info-");
    const up = await upJson(r);
    ok(await r.cotal(["space", "add", "beta", "--max-conns", "12", "--max-disk", "8M"]));
    const nc = await connectCreds(up.url, await credsText(r, "beta", "app"));
    try {
      const kv = await new Kvm(nc).open("cotal_state_beta");
      for (let i = 0; i < 10; i++) await kv.put(`k${i}`, new Uint8Array(256).fill(i));
      const d = parseJson<InfoDoc>(ok(await r.cotal(["space", "info", "beta", "--json"])));
      expect(d).toMatchObject({ space: "beta", state: "active", usage: { read: true } });
      expect(d.publicKey).toMatch(/^A[A-Z2-7]{55}$/);
      expect(row(d, "conns")).toMatchObject({ limit: 12 });
      expect(row(d, "conns").used).toBeGreaterThanOrEqual(1);
      expect(row(d, "disk")).toMatchObject({ limit: 8 * 1024 ** 2 });
      expect(row(d, "disk").used).toBeGreaterThan(0);
      expect(row(d, "streams").used).toBe(templateStreamNames("beta").length);
      expect(d.creds.map((c) => c.user)).toContain("app");
      // Redis down is a line of the document, never a refusal
      const noRedis = parseJson<InfoDoc>(ok(await r.cotal(["space", "info", "beta", "--json"], { env: { REDIS_URL: "redis://127.0.0.1:1" } })));
      expect(noRedis.backups.reachable).toBe(false);
      const human = ok(await r.cotal(["space", "info", "beta"])).stdout;
      expect(human).toMatch(/^ {2}conns +[1-9]\d* +12 +\d+\.\d%$/m);
      expect(human).toMatch(/^ {2}disk +\S+ \S*B +8 MiB/m);
    } finally {
      await nc.close();
    }

    const refused = await r.cotal(["space", "info", "nosuch"]);
    const next = refusedWith(refused, "space-not-found", 5);
    expect(next).toBe(`cotal --root ${r.root} space list`);
    expect((await runPrinted(next)).code).toBe(0);

    ok(await r.cotal(["down"]));
    const stopped = parseJson<InfoDoc>(ok(await r.cotal(["space", "info", "beta", "--json"])));
    expect(stopped.usage).toEqual({ read: false, reason: "broker not running" });
    expect(row(stopped, "conns")).toMatchObject({ limit: 12, used: null });
    expect(row(stopped, "disk")).toMatchObject({ limit: 8 * 1024 ** 2, used: null });
    expect(ok(await r.cotal(["space", "info", "beta"])).stdout).toContain("usage: broker not running");
  }, 60_000);
});
