import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Registry } from "prom-client";
import { parse } from "yaml";
import { describe, expect, it } from "vitest";
import { exportRoot, WorkerMetrics, type RootSnapshot } from "../src/index.js";

const RULES = join(import.meta.dirname, "../../../infra/prometheus/cotal-alerts.yml");

interface Rule {
  alert?: string;
  expr?: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

/** Every family name a worker and `cotal metrics` register, with a histogram's sample suffixes. */
function registeredSeries(): Set<string> {
  const read = async (): Promise<RootSnapshot> => ({ rootState: "clean", spaces: [], usageUnread: 0, queues: null, backups: null, redisError: null });
  const worker = new WorkerMetrics(() => 0);
  worker.exportRoot("/r", { read });
  const standalone = new Registry();
  exportRoot({ registry: standalone, read });
  const metrics = [...worker.registry.getMetricsAsArray(), ...worker.rootRegistry.getMetricsAsArray(), ...standalone.getMetricsAsArray()];
  return new Set(metrics.flatMap((m) => [m.name, `${m.name}_bucket`, `${m.name}_sum`, `${m.name}_count`]));
}

/** PromQL's own words an expression may use beside metric names (functions are followed by "(" and skipped). */
const KEYWORDS = new Set(["by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless", "bool", "offset"]);

/** The metric names an expression reads: identifiers outside strings, label matchers and ranges, not functions or keywords. */
export function seriesOf(expr: string): string[] {
  const bare = expr.replace(/"(?:[^"\\]|\\.)*"/g, '""').replace(/\{[^}]*\}/g, " ").replace(/\[[^\]]*\]/g, " ");
  const names: string[] = [];
  for (const m of bare.matchAll(/[a-zA-Z_:][a-zA-Z0-9_:]*/g)) {
    const after = bare.slice((m.index ?? 0) + m[0].length).trimStart();
    if (after.startsWith("(") || KEYWORDS.has(m[0])) continue;
    names.push(m[0]);
  }
  return names;
}

describe("infra/prometheus/cotal-alerts.yml", () => {
  const doc = parse(readFileSync(RULES, "utf8")) as { groups: { name: string; rules: Rule[] }[] };
  const rules = doc.groups.flatMap((g) => g.rules);
  const registered = registeredSeries();

  it("has the four alerts the docs promise: near quota, no backup in 26 h, a root blocked 10 min, failed jobs", () => {
    const names = rules.map((r) => r.alert);
    expect(names).toEqual(expect.arrayContaining(["CotalTenantNearStorageQuota", "CotalBackupStale", "CotalRootBlocked", "CotalJobsFailed"]));
    expect(rules.find((r) => r.alert === "CotalBackupStale")?.expr).toMatch(/26 \* 3600/);
    expect(rules.find((r) => r.alert === "CotalRootBlocked")?.for).toBe("10m");
  });

  it.each(rules.map((r) => [r.alert ?? "?", r] as const))("%s reads only series cotal registers, and says what to run", (_name, rule) => {
    expect(rule.expr).toBeTypeOf("string");
    const used = seriesOf(rule.expr as string);
    expect(used.length, rule.expr).toBeGreaterThan(0);
    for (const s of used) expect(registered, `${s} in ${rule.expr}`).toContain(s);
    expect(rule.labels?.severity).toMatch(/^(warning|critical)$/);
    expect(rule.annotations?.summary).toBeTruthy();
    expect(rule.annotations?.next).toMatch(/^cotal /);
  });

  it("the check catches a rule on a series nobody registers", () => {
    expect(seriesOf('time() - cotal_backup_last_succes_timestamp_seconds{space="a"} > 26 * 3600').filter((s) => !registered.has(s))).toEqual(["cotal_backup_last_succes_timestamp_seconds"]);
  });
});
