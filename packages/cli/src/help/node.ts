import type { HelpTable } from "./types.js";

/** A cluster root's per-host agent (docs/commands/node.md). */
export const NODE_HELP: HelpTable = {
  "node run": {
    summary: "keep one cluster node on the committed record, in the foreground until SIGTERM",
    examples: ["cotal node run --node cotal-1a2b3c4d-n2", "cotal node run --node cotal-1a2b3c4d-n2 --once", "cotal --root /srv/cotal node run --node cotal-1a2b3c4d-n3 --interval 5000"],
    errors: ["invalid-argument", "root-missing", "lock-held", "inventory-unreachable", "inventory-busy", "lease-held", "broker-start-failed", "reload-unproven", "broker-not-running"],
  },
  "node add": {
    summary: "join a new node to this cluster root, proven with the others",
    examples: ["cotal node add", "cotal node add --host 10.0.0.4", "cotal --root /srv/cotal node add --port 4322 --cluster-port 6322"],
    errors: ["invalid-argument", "root-missing", "lock-held", "journal-blocked", "corrupt-record", "io", "broker-not-running", "inventory-unreachable", "cluster-unproven"],
  },
  "node bundle": {
    summary: "write what a node's host keeps instead of the root, to copy there",
    examples: ["cotal node bundle --node cotal-1a2b3c4d-n2 --out /srv/cotal-n2", "cotal --root /srv/cotal node bundle --node cotal-1a2b3c4d-n3 --out /srv/cotal-n3 --json"],
    errors: ["invalid-argument", "root-missing", "corrupt-record"],
  },
  "node forget": {
    summary: "remove a node gone for good; the others are proven without it",
    examples: ["cotal node forget cotal-1a2b3c4d-n4", "cotal --root /srv/cotal node forget cotal-1a2b3c4d-n2 --json"],
    errors: ["invalid-argument", "root-missing", "lock-held", "journal-blocked", "live-process", "broker-unreachable", "cluster-unproven", "inventory-unreachable"],
  },
};
