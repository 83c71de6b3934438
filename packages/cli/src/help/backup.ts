import type { HelpTable } from "./types.js";

/** Backups, restores and their residue: space backup/restore, backup verify, clean (docs/commands/backup.md, clean.md). */
export const BACKUP_HELP: HelpTable = {
  "space backup": {
    summary: "back up one space: live, or --quiesce for one moment across streams",
    examples: [
      "cotal space backup alpha --out /srv/backups/alpha-1",
      "cotal space backup alpha --quiesce --out /srv/backups/alpha-cut",
      "cotal space backup alpha --out /srv/backups --every 6h --keep 14 --queue",
    ],
    errors: ["invalid-space-name", "invalid-argument", "root-missing", "space-not-found", "io", "live-process", "lock-held", "journal-blocked", "cut-required", "store-inventory", "attempt-pending", "cluster-offline", "snapshot-failed", "broker-unreachable", "redis-unreachable", "reload-unproven"],
  },
  "space restore": {
    summary: "restore one space from an artifact (over its streams: --replace --yes)",
    examples: [
      "cotal space restore alpha --from /srv/backups/alpha-1",
      "cotal space restore alpha --from /srv/backups/alpha-1 --replace --yes",
      "cotal space restore beta --from /srv/backups/alpha-1 --rebind-account",
    ],
    errors: ["invalid-space-name", "invalid-argument", "root-missing", "space-not-found", "io", "artifact-invalid", "account-mismatch", "restore-target-not-empty", "confirmation-required", "quota-overcommit", "restore-verify-failed", "snapshot-failed", "lock-held", "journal-blocked", "cut-required", "store-inventory", "attempt-pending", "cluster-offline", "redis-unreachable", "reload-unproven", "job-failed", "job-lost"],
  },
  "backup verify": {
    summary: "check an artifact without restoring it: manifest, sizes, sha256",
    examples: ["cotal backup verify /srv/backups/alpha-1", "cotal backup verify /srv/backups/alpha-1 --json"],
    errors: ["io", "artifact-invalid"],
  },
  "clean orphan-streams": {
    summary: "list (--yes: delete) store streams no account record vouches for",
    examples: ["cotal clean orphan-streams", "cotal --root /srv/cotal clean orphan-streams --yes"],
    errors: ["root-missing", "broker-running", "confirmation-required", "cluster-offline", "lock-held", "io"],
  },
  "clean restore-attempt": {
    summary: "remove what an interrupted offline backup/restore provably made",
    examples: ["cotal clean restore-attempt --attempt 0c6f2a9e", "cotal --root /srv/cotal clean restore-attempt --attempt 0c6f2a9e --json"],
    errors: ["root-missing", "attempt-pending", "lock-held", "io"],
  },
};
