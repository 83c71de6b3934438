import type { HelpTable } from "./types.js";

/** The broker's own verbs: up, down, status, broker reconcile (docs/commands/broker.md). */
export const BROKER_HELP: HelpTable = {
  "up": {
    summary: "create the root on first run, start nats-server and provision every space",
    examples: [
      "cotal up --detach",
      "cotal --root /srv/cotal up --detach --port 4333 --space alpha",
      "cotal up --detach --rotate-sys",
    ],
    errors: ["invalid-argument", "space-not-found", "port-in-use", "broker-running", "nats-server-missing", "broker-start-failed", "broker-unreachable", "divergence", "resume-refused", "journal-blocked", "corrupt-record", "system-seed-absent", "lock-held", "reload-unproven", "cluster-unproven", "io"],
  },
  "down": {
    summary: "stop the broker (SIGTERM, SIGKILL after 15 s); stopped is a no-op",
    examples: ["cotal down", "cotal --root /srv/cotal down --preserve-state"],
    errors: ["root-missing", "lock-held", "cluster-offline", "io"],
  },
  "status": {
    summary: "the broker, the tenants on disk and in its config, the derived state",
    examples: ["cotal status", "cotal --root /srv/cotal status --json"],
    errors: ["root-missing", "io"],
  },
  "broker reconcile": {
    summary: "print the disk and KV lists and what differs; with a direction, converge them",
    examples: ["cotal broker reconcile", "cotal broker reconcile --adopt-disk --yes", "cotal --root /srv/cotal broker reconcile --adopt-kv --yes --json"],
    errors: ["root-missing", "direction-required", "confirmation-required", "corrupt-record", "lock-held", "lease-held", "conflict", "broker-unreachable", "cluster-offline", "reload-unproven", "cluster-unproven"],
  },
};
