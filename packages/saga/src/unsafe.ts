/**
 * Test-only switches that each disable exactly one guard, so a live cell can show it goes red
 * without it (docs/ablation.md). Inert unless `COTAL_TEST_UNSAFE_<NAME>=1` is set; never set in use.
 */
export const UNSAFE_SWITCHES = [
  /** Claims and commits become last-writer-wins (the R1 lost update). */
  "DISABLE_CAS",
  /** Promotion skips the step-6 lease re-check (a paused writer resurrects a removed tenant). */
  "DISABLE_FENCE",
  /** A standing space-rm journal no longer blocks other verbs (reconcile re-admits the tenant). */
  "IGNORE_JOURNAL",
  /** Only the step-3 claim becomes last-writer-wins. */
  "DISABLE_CLAIM_CAS",
  /** Only the step-5 staged-digest write becomes last-writer-wins. */
  "DISABLE_STAGE_CAS",
  /** Any reload verdict counts as proven: appliedGeneration without the server's word. */
  "PROOF_WITHOUT_LOG",
  /** The reload proof reads the whole log, not only what was written after our SIGHUP. */
  "LOG_FROM_START",
  /** The step-8 commit skips sha256(server.conf) == configDigest. */
  "SKIP_COMMIT_DIGEST",
  /** Writers skip the maintenance lock, as two hosts would: only the KV fences them. */
  "SKIP_LOCK",
  /** Seeding the inventory overwrites instead of create-only. */
  "DISABLE_SEED_CAS",
  /** Space names are not validated. */
  "SKIP_NAME_VALIDATION",
  /** Unreadable account records are skipped instead of refusing. */
  "IGNORE_CORRUPT",
  /** A snapshot without the server's end marker counts as complete. */
  "ACCEPT_PARTIAL_SNAPSHOT",
  /** nats-servers of this root that no record names are not looked for. */
  "IGNORE_STRAYS",
  /** $SYS observers may subscribe to every `_INBOX.>` (other tenants' replies). */
  "WIDE_OBSERVER_INBOX",
  /** $SYS observers may request any account's data, not only their own. */
  "WIDE_OBSERVER_REQUESTS",
  /** Default space users get the account's full JetStream API. */
  "UNRESTRICTED_USER",
  /** space rm does not cut a removed tenant's live connections. */
  "NO_EVICT",
  /** Every reload is a SIGHUP proven from the log alone, even where the RELOAD request exists. */
  "RELOAD_BY_SIGNAL",
  /** New spaces are minted unbounded and the broker budget is not checked (one tenant starves all). */
  "UNLIMITED_TENANTS",
  /** The render takes every record from the verb's inventory view, even the one its own claim re-signed or after the revision moved. */
  "STALE_RECORD_VIEW",
  /** A rolled-back `space limits` claim leaves its re-signed record (the record lies about the server). */
  "KEEP_LIMITS_RECORD",
  /** Live renders take settings.json's JetStream max as is (a reload nats-server refuses). */
  "RENDER_SETTINGS_MAX",
  /** `cotal dashboard` binds any --host without --allow-remote (the board has no login). */
  "DASHBOARD_ANY_HOST",
  /** The dashboard answers requests whatever their Host header names (DNS rebinding reaches loopback). */
  "DASHBOARD_ANY_HOST_HEADER",
  /** The dashboard answers every method: Bull Board's API takes job actions (add, pause, empty, obliterate, retry…). */
  "DASHBOARD_WRITES",
  /** Worker and verb log lines are written without the seed scrubber. */
  "LOG_SEEDS",
  /** A batch add skips the broker's open-file budget (it fails mid-provisioning instead). */
  "IGNORE_FD_BUDGET",
  /** Inventory writes skip the max_payload size guard, and a too-large refusal reads as a lost reply (a retried conflict). */
  "IGNORE_RECORD_SIZE",
  /** An online backup does not quiesce its tenant: its clients stay connected (and may write) while the streams are read. */
  "SKIP_QUIESCE",
  /** An online restore does not refuse a namespace holding the artifact's streams with data: it restores over them as --replace would. */
  "RESTORE_OVER_DATA",
  /** An online restore deletes the streams it replaces without keeping a safety copy first (a failure leaves the tenant with less). */
  "RESTORE_WITHOUT_SAFETY_COPY",
  /** An online restore does not check that the artifact fits the tenant's quota before it quiesces and deletes. */
  "RESTORE_SKIP_QUOTA_CHECK",
  /** space limits accepts a disk or stream quota below what the tenant already stores, without --force. */
  "LIMITS_BELOW_USAGE",
  /** cotal status reports no standing journal entry or dead lock holder as what blocks the root (it says clean). */
  "STATUS_IGNORES_BLOCKS",
  /** space rm deletes the tenant's streams before checking that the config without it renders. */
  "RM_SKIP_RENDER_CHECK",
  /** The CLI does not exit once its verb returned: a handle left open (a connection to a stopped server) keeps it alive. Read by packages/cli/src/bin.ts. */
  "LINGER_AFTER_VERB",
  /** A cluster root commits a generation some member node has not proven (and the cluster reload reports such a node as proven). */
  "CLUSTER_COMMIT_UNPROVEN",
  /** An offline backup/restore clones the whole store for its isolated broker, not only the tenant's account directory. */
  "CLONE_WHOLE_STORE",
  /** A queued restore re-delivered after it completed runs again instead of answering from its receipt. */
  "IGNORE_RESTORE_RECEIPT",
  /** space rm does not wait for a committed add still provisioning the space (its streams outlive the removal). */
  "RM_DURING_PROVISIONING",
  /** A previous version's claim is resumed from its delta even when its stored next list disagrees. */
  "TRUST_LEGACY_NEXT",
  /** A refused cluster reload records no node's partial proof, so status cannot name which nodes still admit a removed tenant. */
  "CLUSTER_NO_PARTIAL_PROOFS",
  /** space rm on a cluster root cuts the removed tenant's connections on node 1 only. */
  "EVICT_FIRST_NODE_ONLY",
  /** A space template's `replicas` is not checked against the cluster's size (or a single broker's 1). */
  "TEMPLATE_REPLICAS_UNCHECKED",
  /** Any claim, a removal too, may commit on a cluster with a member that is down left behind (not only an add). */
  "CLUSTER_BEHIND_ANY_OP",
  /** Offline verbs on a cluster root are not refused: they open a private broker on a store no node holds (a phantom record). */
  "CLUSTER_OFFLINE_VERBS",
  /** `up --rotate-sys` on a cluster root checks only the first node is stopped (the others keep the retired system account). */
  "ROTATE_WITH_NODES_UP",
  /** A cluster reload renames a node's config without re-checking the writer lease before that node (only the root's step-6 fence). */
  "CLUSTER_NO_NODE_FENCE",
  /** `cotal node run` applies its stale decision without the writer lease or a re-read under it (and renames unfenced). */
  "NODE_APPLY_UNFENCED",
  /** `cotal node run` lets its node run the whole committed list while a pending claim removes tenants from it. */
  "NODE_ADMITS_PENDING_REMOVES",
  /** A cluster node boots with no tenant preloaded instead of every tenant held: JetStream drops the tenants' stream assignments at boot (issue #28). */
  "CLUSTER_BOOT_BARE",
  /** A backup's snapshots skip the server's checksum pass (`jsck`): a store with a corrupted message is backed up silently. */
  "SKIP_STORE_CHECK",
  /** `up --space <name>` on a running root does not check the space exists (it prints a creds path that does not). */
  "UP_ANY_SPACE",
  /** `space creds --out` is not checked before the write (a path under a regular file fails as `internal`). */
  "CREDS_OUT_UNCHECKED",
  /** `cotal node run` takes no per-node agent lock: a second agent for the same node runs beside the first. */
  "NODE_AGENT_UNLOCKED",
  /** A lock file's temp is left behind when its write fails (a full disk). */
  "KEEP_LOCK_TEMP",
  /** `up` does not adopt a running broker whose run/broker.json is unreadable (only `down && up` gets out). */
  "NO_BROKER_ADOPT",
] as const;

export type UnsafeSwitch = (typeof UNSAFE_SWITCHES)[number];

export function unsafe(name: UnsafeSwitch): boolean {
  return process.env[`COTAL_TEST_UNSAFE_${name}`] === "1";
}
