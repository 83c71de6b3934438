/**
 * What one mutating verb spends reading and validating the tenant records on disk at N tenants:
 * the preamble's `certainInventory` and the step-5 render (`renderList`: every listed record, then
 * `renderRoot`), each in a fresh process (a CLI verb starts cold), then again in the same process.
 * "full" runs start without the root's index of checked records (run/validated-records.json: every
 * record validated, as before the index); "indexed" runs find it (only changed records validated).
 * No broker: the records are minted into a temp root.
 *
 *   node packages/bench/dist/validation.js [--tenants 2000,5000] [--runs 3]
 */
import { GUARDS_ON } from "@cotal/core/light";
import { spawnSync } from "node:child_process";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { RootLayout } from "@cotal/core";
import { renderRoot } from "@cotal/core/broker";
import { certainInventory, loadBrokerTrust, loadSpaceAccount, saveSpaceAccount, toAccountRecord } from "@cotal/core/root";
import { createAccountTrust } from "@cotal/core/trust";
import { createTempRoot } from "@cotal/core/testing";
import { parseArgs } from "./lib/args.js";
import { onCleanup, runBench } from "./lib/cleanup.js";
import { names } from "./lib/cotal-root.js";
import { writeResult } from "./lib/out.js";
import { ms, summarize, table } from "./lib/stats.js";

const args = parseArgs();

interface ChildRun {
  /** certainInventory, cold process. */
  inventory: number;
  /** renderList after it: loadSpaceAccount of every listed name + renderRoot. */
  render: number;
  /** The same two again in the same process. */
  inventoryAgain: number;
  renderAgain: number;
}

function child(root: string): void {
  const layout = new RootLayout(root);
  const time = <T>(fn: () => T): [T, number] => {
    const t0 = performance.now();
    const v = fn();
    return [v, performance.now() - t0];
  };
  const renderList = (list: string[]): void => {
    const recs = list.map((n) => {
      const r = loadSpaceAccount(layout, n);
      if (!r) throw new Error(`no record for ${n}`);
      return r;
    });
    renderRoot(layout, recs, GUARDS_ON);
  };
  const [inv, inventory] = time(() => certainInventory(layout, GUARDS_ON));
  const list = inv.map((r) => r.name);
  const [, render] = time(() => renderList(list));
  const [, inventoryAgain] = time(() => certainInventory(layout, GUARDS_ON));
  const [, renderAgain] = time(() => renderList(list));
  process.stdout.write(JSON.stringify({ inventory, render, inventoryAgain, renderAgain } satisfies ChildRun));
}

if (args.str("child", "") !== "") child(args.str("child", ""));
else
  await runBench(async () => {
    const levels = args.list("tenants", [2000, 5000]);
    const runs = args.int("runs", 3);
    const results: { tenants: number; mode: "full" | "indexed"; runs: ChildRun[] }[] = [];
    for (const n of levels) {
      const tmp = createTempRoot();
      onCleanup(`remove ${tmp.layout.root}`, () => tmp.remove());
      const broker = loadBrokerTrust(tmp.layout);
      for (const name of names("v", 1, n - 1)) saveSpaceAccount(tmp.layout, toAccountRecord(createAccountTrust(broker.operator, name, { kind: "space" })));
      const index = join(tmp.layout.runDir, "validated-records.json");
      for (const mode of ["full", "indexed"] as const) {
        const out: ChildRun[] = [];
        for (let i = 0; i < runs; i++) {
          if (mode === "full") rmSync(index, { force: true });
          const r = spawnSync(process.execPath, [fileURLToPath(import.meta.url), "--child", tmp.layout.root], { encoding: "utf8" });
          if (r.status !== 0) throw new Error(`child failed: ${r.stderr}`);
          out.push(JSON.parse(r.stdout) as ChildRun);
        }
        results.push({ tenants: n, mode, runs: out });
      }
    }
    const med = (xs: number[]): string => ms(summarize(xs).median);
    console.log(
      table(
        ["tenants", "mode", "certainInventory (cold)", "renderList", "both (one verb)", "certainInventory (same process)", "renderList (same process)"],
        results.map((r) => [
          String(r.tenants),
          r.mode,
          med(r.runs.map((x) => x.inventory)),
          med(r.runs.map((x) => x.render)),
          med(r.runs.map((x) => x.inventory + x.render)),
          med(r.runs.map((x) => x.inventoryAgain)),
          med(r.runs.map((x) => x.renderAgain)),
        ]),
      ),
    );
    console.log(`wrote ${writeResult("validation", { levels, runs, results })}`);
  });
