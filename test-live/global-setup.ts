import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { CELLS_DIR, REPORT_DIR, type CellResult } from "./fixtures/matrix.js";

let startedAt = 0;

export function setup(): void {
  startedAt = Date.now();
  mkdirSync(CELLS_DIR, { recursive: true });
}

/** Prints the live matrix table and writes reports/matrix.json once every suite has run. */
export function teardown(): void {
  const files = readdirSync(CELLS_DIR).filter((f) => f.endsWith(".json") && statSync(join(CELLS_DIR, f)).mtimeMs >= startedAt);
  if (files.length === 0) return;
  const cells = files.sort().map((f) => JSON.parse(readFileSync(join(CELLS_DIR, f), "utf8")) as CellResult);
  const rows = cells.map((c) => [c.cell, c.result, c.attempts ?? "", c.attemptsPerSecond ?? "", c.attemptsPerSecondAfterRemoval ?? "", c.successesAfterRemoval ?? "", `${(c.durationMs / 1000).toFixed(1)}s`].map(String));
  const head = ["cell", "result", "attempts", "attempts/s", "after removal /s", "successes after removal", "duration"];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]?.length ?? 0)));
  const line = (r: string[]) => `| ${r.map((v, i) => v.padEnd(widths[i] ?? 0)).join(" | ")} |`;
  const out = [line(head), `|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`, ...rows.map(line)].join("\n");
  const reruns = cells.flatMap((c) => (c.sparseRuns ?? []).map((n) => `  ${c.cell}: ${n}`));
  console.log(`\nlive matrix (${cells.filter((c) => c.result === "pass").length}/${cells.length} cells pass)\n${out}\n${reruns.length > 0 ? `runs re-run for a sparse poll:\n${reruns.join("\n")}\n` : ""}`);
  writeFileSync(join(REPORT_DIR, "matrix.json"), `${JSON.stringify({ at: new Date().toISOString(), cells }, null, 2)}\n`);
}
