import type { HelpTable } from "./types.js";

/** The read-only dashboard (docs/commands/dashboard.md). */
export const DASHBOARD_HELP: HelpTable = {
  "dashboard": {
    summary: "serve the tenant pages and a read-only Bull Board on loopback until Ctrl-C",
    examples: ["cotal dashboard", "cotal dashboard --port 0", "cotal --root /srv/cotal dashboard --host 0.0.0.0 --allow-remote"],
    errors: ["invalid-argument", "root-missing", "port-in-use"],
  },
};
