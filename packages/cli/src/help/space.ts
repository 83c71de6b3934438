import type { HelpTable } from "./types.js";

/** The per-space verbs: space add, rm, limits, list, info, creds, revoke, rotate-key, users (docs/commands/space.md). */
export const SPACE_HELP: HelpTable = {
  "space add": {
    summary: "add spaces: one generation and one proven reload for the whole batch",
    examples: [
      "cotal space add alpha --max-disk 256M --max-conns 64",
      "cotal space add alpha beta gamma --max-disk 1G",
      "cotal --root /srv/cotal space add --from /srv/tenants.txt --queue",
    ],
    errors: ["invalid-space-name", "invalid-argument", "root-missing", "quota-overcommit", "fd-budget", "record-too-large", "system-seed-absent", "journal-blocked", "lock-held", "conflict", "lease-held", "broker-not-running", "redis-unreachable", "reload-unproven", "job-failed", "job-lost"],
  },
  "space rm": {
    summary: "remove a space and everything it stored (its streams are deleted)",
    examples: ["cotal space rm alpha --yes", "cotal --root /srv/cotal space rm alpha --yes --queue"],
    errors: ["invalid-space-name", "invalid-argument", "root-missing", "confirmation-required", "live-process", "lock-held", "conflict", "lease-held", "journal-blocked", "cluster-offline", "broker-unreachable", "redis-unreachable", "reload-unproven", "reap-incomplete", "job-failed", "job-lost"],
  },
  "space limits": {
    summary: "print a space's quota, or change the named fields (a proven reload)",
    examples: ["cotal space limits alpha", "cotal space limits alpha --max-conns 64 --max-disk 256M", "cotal space limits alpha --max-disk 16M --force"],
    errors: ["invalid-space-name", "invalid-argument", "root-missing", "space-not-found", "quota-overcommit", "journal-blocked", "lock-held", "conflict", "lease-held", "broker-not-running", "reload-unproven"],
  },
  "space list": {
    summary: "every space on disk or in the KV inventory, with its state",
    examples: ["cotal space list", "cotal --root /srv/cotal space list --json"],
    errors: ["root-missing", "corrupt-record", "io"],
  },
  "space info": {
    summary: "one space: state, limits against usage, creds, backup schedule",
    examples: ["cotal space info alpha", "cotal --root /srv/cotal space info alpha --json"],
    errors: ["invalid-space-name", "root-missing", "space-not-found", "corrupt-record"],
  },
  "space creds": {
    summary: "mint a user creds file that connects only to one space",
    examples: [
      "cotal space creds alpha --user app --expires 24h --out alpha.creds",
      "cotal space creds alpha --admin --out alpha-admin.creds",
      "cotal space creds alpha --user reader --allow-sub 'cotal.alpha.events.>' --out reader.creds",
    ],
    errors: ["invalid-space-name", "invalid-argument", "root-missing", "space-not-found", "io"],
  },
  "space revoke": {
    summary: "revoke a user's creds: its key refused by the server, its connections cut",
    examples: [
      "cotal space revoke alpha --user app",
      "cotal space revoke alpha --user app --before 2026-12-01T00:00:00Z",
      "cotal --root /srv/cotal space revoke alpha --user app --queue",
    ],
    errors: ["invalid-space-name", "invalid-argument", "root-missing", "space-not-found", "user-not-found", "journal-blocked", "lock-held", "conflict", "lease-held", "broker-not-running", "reload-unproven", "redis-unreachable", "job-failed", "job-lost"],
  },
  "space rotate-key": {
    summary: "rotate a space's signing key: users of the old key refused once it is removed",
    examples: [
      "cotal space rotate-key alpha",
      "cotal space rotate-key alpha --keep-old 24h",
      "cotal --root /srv/cotal space rotate-key alpha --finish",
    ],
    errors: ["invalid-space-name", "invalid-argument", "root-missing", "space-not-found", "journal-blocked", "lock-held", "conflict", "lease-held", "broker-not-running", "reload-unproven", "redis-unreachable", "job-failed", "job-lost"],
  },
  "space users": {
    summary: "every cred minted for a space: user, key, issued, expiry, revoked or not",
    examples: ["cotal space users alpha", "cotal --root /srv/cotal space users alpha --json"],
    errors: ["invalid-space-name", "root-missing", "space-not-found", "corrupt-record"],
  },
};
