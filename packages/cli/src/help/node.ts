import type { HelpTable } from "./types.js";

/** A cluster root's per-host agent (docs/commands/node.md). */
export const NODE_HELP: HelpTable = {
  "node run": {
    summary: "keep one cluster node on the committed record, in the foreground until SIGTERM",
    examples: ["cotal node run --node cotal-1a2b3c4d-n2", "cotal node run --node cotal-1a2b3c4d-n2 --once", "cotal --root /srv/cotal node run --node cotal-1a2b3c4d-n3 --interval 5000"],
    errors: ["invalid-argument", "root-missing", "lock-held", "inventory-unreachable", "inventory-busy", "lease-held", "broker-start-failed", "reload-unproven"],
  },
};
