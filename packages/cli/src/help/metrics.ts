import type { HelpTable } from "./types.js";

/** The root's Prometheus exporter (docs/metrics.md). */
export const METRICS_HELP: HelpTable = {
  "metrics": {
    summary: "serve this root's Prometheus series on /metrics (read-only) until Ctrl-C",
    examples: ["cotal metrics", "cotal metrics --port 0 --no-redis", "cotal --root /srv/cotal metrics --host 0.0.0.0 --allow-remote"],
    errors: ["invalid-argument", "root-missing", "port-in-use"],
  },
};
