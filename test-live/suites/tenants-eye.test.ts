import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { harnessTeardown } from "@cotal/harness";
import { ok } from "../fixtures/space-data.js";
import { credsText, disposeLiveRoots, statusOf, upRoot } from "../fixtures/tenants.js";
import { VERSION_DEPENDENT } from "../fixtures/tags.js";
import { eyeTable, tenantApps, throughSteps, type EyeRow } from "../fixtures/tenants-eye.js";

// Issue #28's tenant's-eye suite: alpha's applications (nats.js and nats-py, default settings) keep
// publishing and writing KV through every verb on the broker; each step is judged from their side
// (fixtures/tenants-eye.ts). The table goes to the log, verb × server × client.
afterEach(disposeLiveRoots);
afterAll(harnessTeardown);

const rows: EyeRow[] = [];
afterAll(() => {
  if (rows.length > 0) console.log(`\n[tenants-eye]\n${eyeTable(rows)}\n`);
});

describe("a tenant's applications through every verb on a single broker", VERSION_DEPENDENT, () => {
  it("add, limits, a sibling's revoke, a live backup, a sibling's restore --replace and removal, down/up: never closed, writable after each, interrupted only where documented", async () => {
    const { r, up } = await upRoot();
    const scratch = join(r.root, "..");
    const apps = await tenantApps(up.url, await credsText(r, "alpha", "app"), "alpha", scratch);
    const siblingArtifact = join(scratch, "beta.bak");
    rows.push(
      ...(await throughSteps(apps, [
        { verb: "space add beta", interrupts: "reload", run: async () => void ok(await r.cotal(["space", "add", "beta"])) },
        { verb: "space limits alpha", interrupts: "reload", run: async () => void ok(await r.cotal(["space", "limits", "alpha", "--max-conns", "100"])) },
        {
          verb: "space revoke beta --user carol",
          interrupts: "reload",
          run: async () => {
            ok(await r.cotal(["space", "creds", "beta", "--user", "carol", "--expires", "1h"]));
            ok(await r.cotal(["space", "revoke", "beta", "--user", "carol"]));
          },
        },
        { verb: "space backup alpha (live)", interrupts: "none", run: async () => void ok(await r.cotal(["space", "backup", "alpha", "--out", join(scratch, "alpha.bak")])) },
        {
          verb: "space restore beta --replace",
          interrupts: "reload",
          run: async () => {
            ok(await r.cotal(["space", "backup", "beta", "--out", siblingArtifact]));
            ok(await r.cotal(["space", "restore", "beta", "--from", siblingArtifact, "--replace", "--yes"]));
          },
        },
        { verb: "space rm beta", interrupts: "reload", run: async () => void ok(await r.cotal(["space", "rm", "beta", "--yes"])) },
        {
          verb: "down, up",
          interrupts: "restart",
          run: async () => {
            ok(await r.cotal(["down"]));
            ok(await r.cotal(["up", "--detach", "--port", String(r.port)]));
          },
        },
      ])),
    );
    for (const app of Object.values(apps)) await app.stop();
    expect((await statusOf(r)).state).toBe("clean");
  });
});
