/**
 * The guards, handed in (docs/ablation.md). Each key names one test-only switch; `true` switches off exactly
 * that one guard, so a live cell can show it goes red without it. {@link GUARDS_ON} (every guard on) is what
 * the product runs with. The core never reads the environment for a guard: only an entry builds this object
 * from `COTAL_TEST_UNSAFE_<NAME>=1` ({@link guardsFromEnv}: the CLI's `bin.ts`, the worker's `main.ts`, the test
 * harness) and passes it down, through the verbs' options, the verb context, the session and the saga's
 * environment. This is the one list of the switches and their documentation.
 */
export interface Guards {
  /** Claims and commits become last-writer-wins (the R1 lost update). */
  readonly DISABLE_CAS: boolean;
  /** Promotion skips the step-6 lease re-check (a paused writer resurrects a removed tenant). */
  readonly DISABLE_FENCE: boolean;
  /** A standing space-rm journal no longer blocks other verbs (reconcile re-admits the tenant). */
  readonly IGNORE_JOURNAL: boolean;
  /** Only the step-3 claim becomes last-writer-wins. */
  readonly DISABLE_CLAIM_CAS: boolean;
  /** Only the step-5 staged-digest write becomes last-writer-wins. */
  readonly DISABLE_STAGE_CAS: boolean;
  /** Any reload verdict counts as proven: appliedGeneration without the server's word. */
  readonly PROOF_WITHOUT_LOG: boolean;
  /** The reload proof reads the whole log, not only what was written after our SIGHUP. */
  readonly LOG_FROM_START: boolean;
  /** The step-8 commit skips sha256(server.conf) == configDigest. */
  readonly SKIP_COMMIT_DIGEST: boolean;
  /** Writers skip the maintenance lock, as two hosts would: only the KV fences them. */
  readonly SKIP_LOCK: boolean;
  /** Seeding the inventory overwrites instead of create-only. */
  readonly DISABLE_SEED_CAS: boolean;
  /** Space names are not validated. */
  readonly SKIP_NAME_VALIDATION: boolean;
  /** Unreadable account records are skipped instead of refusing. */
  readonly IGNORE_CORRUPT: boolean;
  /** A snapshot without the server's end marker counts as complete. */
  readonly ACCEPT_PARTIAL_SNAPSHOT: boolean;
  /** nats-servers of this root that no record names are not looked for. */
  readonly IGNORE_STRAYS: boolean;
  /** $SYS observers may subscribe to every `_INBOX.>` (other tenants' replies). */
  readonly WIDE_OBSERVER_INBOX: boolean;
  /** $SYS observers may request any account's data, not only their own. */
  readonly WIDE_OBSERVER_REQUESTS: boolean;
  /** Default space users get the account's full JetStream API. */
  readonly UNRESTRICTED_USER: boolean;
  /** space rm does not cut a removed tenant's live connections. */
  readonly NO_EVICT: boolean;
  /** Every reload is a SIGHUP proven from the log alone, even where the RELOAD request exists. */
  readonly RELOAD_BY_SIGNAL: boolean;
  /** New spaces are minted unbounded and the broker budget is not checked (one tenant starves all). */
  readonly UNLIMITED_TENANTS: boolean;
  /** The render takes every record from the verb's inventory view, even the one its own claim re-signed or after the revision moved. */
  readonly STALE_RECORD_VIEW: boolean;
  /** A rolled-back `space limits` claim leaves its re-signed record (the record lies about the server). */
  readonly KEEP_LIMITS_RECORD: boolean;
  /** Live renders take settings.json's JetStream max as is (a reload nats-server refuses). */
  readonly RENDER_SETTINGS_MAX: boolean;
  /** `cotal dashboard` binds any --host without --allow-remote (the board has no login). */
  readonly DASHBOARD_ANY_HOST: boolean;
  /** The dashboard answers requests whatever their Host header names (DNS rebinding reaches loopback). */
  readonly DASHBOARD_ANY_HOST_HEADER: boolean;
  /** The dashboard answers every method: Bull Board's API takes job actions (add, pause, empty, obliterate, retry…). */
  readonly DASHBOARD_WRITES: boolean;
  /** Worker and verb log lines are written without the seed scrubber. */
  readonly LOG_SEEDS: boolean;
  /** A batch add skips the broker's open-file budget (it fails mid-provisioning instead). */
  readonly IGNORE_FD_BUDGET: boolean;
  /** Inventory writes skip the max_payload size guard, and a too-large refusal reads as a lost reply (a retried conflict). */
  readonly IGNORE_RECORD_SIZE: boolean;
  /** An online backup does not quiesce its tenant: its clients stay connected (and may write) while the streams are read. */
  readonly SKIP_QUIESCE: boolean;
  /** An online restore does not refuse a namespace holding the artifact's streams with data: it restores over them as --replace would. */
  readonly RESTORE_OVER_DATA: boolean;
  /** An online restore deletes the streams it replaces without keeping a safety copy first (a failure leaves the tenant with less). */
  readonly RESTORE_WITHOUT_SAFETY_COPY: boolean;
  /** An online restore does not check that the artifact fits the tenant's quota before it quiesces and deletes. */
  readonly RESTORE_SKIP_QUOTA_CHECK: boolean;
  /** space limits accepts a disk or stream quota below what the tenant already stores, without --force. */
  readonly LIMITS_BELOW_USAGE: boolean;
  /** cotal status reports no standing journal entry or dead lock holder as what blocks the root (it says clean). */
  readonly STATUS_IGNORES_BLOCKS: boolean;
  /** space rm deletes the tenant's streams before checking that the config without it renders. */
  readonly RM_SKIP_RENDER_CHECK: boolean;
  /** The CLI does not exit once its verb returned: a handle left open (a connection to a stopped server) keeps it alive. Read by packages/cli/src/bin.ts. */
  readonly LINGER_AFTER_VERB: boolean;
  /** A cluster root commits a generation some member node has not proven (and the cluster reload reports such a node as proven). */
  readonly CLUSTER_COMMIT_UNPROVEN: boolean;
  /** An offline backup/restore clones the whole store for its private broker, not only the tenant's account directory. */
  readonly CLONE_WHOLE_STORE: boolean;
  /** A queued restore re-delivered after it completed runs again instead of answering from its receipt. */
  readonly IGNORE_RESTORE_RECEIPT: boolean;
  /** space rm does not wait for a committed add still provisioning the space (its streams outlive the removal). */
  readonly RM_DURING_PROVISIONING: boolean;
  /** A refused cluster reload records no node's partial proof, so status cannot name which nodes still admit a removed tenant. */
  readonly CLUSTER_NO_PARTIAL_PROOFS: boolean;
  /** space rm on a cluster root cuts the removed tenant's connections on node 1 only. */
  readonly EVICT_FIRST_NODE_ONLY: boolean;
  /** A space template's `replicas` is not checked against the cluster's size (or a single broker's 1). */
  readonly TEMPLATE_REPLICAS_UNCHECKED: boolean;
  /** Any claim, a removal too, may commit on a cluster with a member that is down left behind (not only an add). */
  readonly CLUSTER_BEHIND_ANY_OP: boolean;
  /** Offline verbs on a cluster root are not refused: they open a private broker on a store no node holds (a phantom record). */
  readonly CLUSTER_OFFLINE_VERBS: boolean;
  /** `up --rotate-sys` on a cluster root checks only the first node is stopped (the others keep the retired system account). */
  readonly ROTATE_WITH_NODES_UP: boolean;
  /** A cluster reload renames a node's config without re-checking the writer lease before that node (only the root's step-6 fence). */
  readonly CLUSTER_NO_NODE_FENCE: boolean;
  /** `cotal node run` applies its stale decision without the writer lease or a re-read under it (and renames unfenced). */
  readonly NODE_APPLY_UNFENCED: boolean;
  /** `cotal node run` lets its node run the whole committed list while a pending claim removes tenants from it. */
  readonly NODE_ADMITS_PENDING_REMOVES: boolean;
  /** `cotal node run` applies a writer's ask (inventory/node-ask.ts) without checking that writer still holds the lease it asked under. */
  readonly NODE_ASK_UNFENCED: boolean;
  /** A cluster node boots with no tenant preloaded instead of every tenant held: JetStream drops the tenants' stream assignments at boot (issue #28). */
  readonly CLUSTER_BOOT_BARE: boolean;
  /** A backup's snapshots skip the server's checksum pass (`jsck`): a store with a corrupted message is backed up silently. */
  readonly SKIP_STORE_CHECK: boolean;
  /** `up --space <name>` on a running root does not check the space exists (it prints a creds path that does not). */
  readonly UP_ANY_SPACE: boolean;
  /** `space creds --out` is not checked before the write (a path under a regular file fails as `internal`). */
  readonly CREDS_OUT_UNCHECKED: boolean;
  /** `cotal node run` takes no per-node agent lock: a second agent for the same node runs beside the first. */
  readonly NODE_AGENT_UNLOCKED: boolean;
  /** A lock file's temp is left behind when its write fails (a full disk). */
  readonly KEEP_LOCK_TEMP: boolean;
  /** `up` does not adopt a running broker whose run/broker.json is unreadable (only `down && up` gets out). */
  readonly NO_BROKER_ADOPT: boolean;
  /** `up` starts nats-server without checking its listener first: a taken port dumps the server's log, and a new root is left behind. */
  readonly UP_SKIP_PORT_CHECK: boolean;
  /** `cotal down` writes no run/stop-intent.json: the foreground `up` serving the broker reads its nats-server's exit 1 (before 2.11) as a death, exits 6 and a unit restarts it; nor run/down.json: a cluster node's running agent starts it again. */
  readonly DOWN_WITHOUT_STOP_INTENT: boolean;
  /** `space revoke` re-signs the space's account without the revocation it claims to add (the revoked cred keeps connecting). */
  readonly SKIP_REVOCATION: boolean;
  /** A cluster node's `cluster {}` renders without route TLS and route authorization: any process that reaches a route port joins. */
  readonly ROUTES_WITHOUT_AUTH: boolean;
  /** `space rotate-key`'s second change re-signs the space's account with the old signing key left in (users of the old key keep connecting). */
  readonly SKIP_SIGNING_KEY_REMOVAL: boolean;
  /** A cluster root's verbs and `status` go through node 1 alone, as before #34: with node 1 down the cluster counts as stopped. */
  readonly VERBS_FIRST_NODE_ONLY: boolean;
  /** A node on another host (its URL's address is not this host's) is reloaded as a local one: by SIGHUP to its recorded pid when it does not answer, proven from its log. */
  readonly REMOTE_NODE_BY_SIGNAL: boolean;
  /** A cluster node's reload counts as proven whatever config digest its server reports, not only the digest of the bytes rendered for it (2.11+). */
  readonly NODE_PROOF_ANY_DIGEST: boolean;
  /** `cotal down` treats a cluster's nodes on other hosts as this host's: their servers are signalled by pid (on the simulated hosts' shared process table, as strays), not left to their hosts. */
  readonly SIGNAL_NODES_ELSEWHERE: boolean;
  /** A cluster reload publishes no node material to the public bucket: an agent that renders from it cannot render a list that names a tenant added since. */
  readonly NODE_MATERIAL_UNPUBLISHED: boolean;
  /** A node agent's authority user is minted without its publish allow list: the node's host may write anything in the authority account (the node material every node renders from). */
  readonly AGENT_CREDS_UNRESTRICTED: boolean;
  /** The verbs and `status` know only the nodes this host's run/broker.json records, not every node of settings.json on another host. */
  readonly UNRECORDED_NODES_IGNORED: boolean;
  /** `cotal node add` starts a node on this host at once with the list on disk, outside the saga: neither it nor the others' new routes are proven, and the record does not name it. */
  readonly NODE_ADD_UNPROVEN: boolean;
  /** `cotal node forget` leaves the forgotten node's agent authority user valid: a host that kept its creds still reads the record and the node material. */
  readonly FORGET_KEEPS_AGENT_USER: boolean;
  /** A cluster node's route TLS renders no `pinned_certs`: a certificate the cluster's CA signed for a node since forgotten still joins the routes. */
  readonly ROUTES_UNPINNED: boolean;
  /** `up --rotate-sys` on a cluster root leaves each node's raft groups under the retired system account's directory: every node boots an empty meta group and deletes every stream as orphaned. */
  readonly ROTATE_STRANDS_RAFT: boolean;
}

/** A switch's name: `COTAL_TEST_UNSAFE_<name>=1` sets it. */
export type GuardSwitch = keyof Guards;

/** Every guard on: what the product runs with, and the default wherever guards are optional. */
export const GUARDS_ON: Guards = Object.freeze({
  DISABLE_CAS: false,
  DISABLE_FENCE: false,
  IGNORE_JOURNAL: false,
  DISABLE_CLAIM_CAS: false,
  DISABLE_STAGE_CAS: false,
  PROOF_WITHOUT_LOG: false,
  LOG_FROM_START: false,
  SKIP_COMMIT_DIGEST: false,
  SKIP_LOCK: false,
  DISABLE_SEED_CAS: false,
  SKIP_NAME_VALIDATION: false,
  IGNORE_CORRUPT: false,
  ACCEPT_PARTIAL_SNAPSHOT: false,
  IGNORE_STRAYS: false,
  WIDE_OBSERVER_INBOX: false,
  WIDE_OBSERVER_REQUESTS: false,
  UNRESTRICTED_USER: false,
  NO_EVICT: false,
  RELOAD_BY_SIGNAL: false,
  UNLIMITED_TENANTS: false,
  STALE_RECORD_VIEW: false,
  KEEP_LIMITS_RECORD: false,
  RENDER_SETTINGS_MAX: false,
  DASHBOARD_ANY_HOST: false,
  DASHBOARD_ANY_HOST_HEADER: false,
  DASHBOARD_WRITES: false,
  LOG_SEEDS: false,
  IGNORE_FD_BUDGET: false,
  IGNORE_RECORD_SIZE: false,
  SKIP_QUIESCE: false,
  RESTORE_OVER_DATA: false,
  RESTORE_WITHOUT_SAFETY_COPY: false,
  RESTORE_SKIP_QUOTA_CHECK: false,
  LIMITS_BELOW_USAGE: false,
  STATUS_IGNORES_BLOCKS: false,
  RM_SKIP_RENDER_CHECK: false,
  LINGER_AFTER_VERB: false,
  CLUSTER_COMMIT_UNPROVEN: false,
  CLONE_WHOLE_STORE: false,
  IGNORE_RESTORE_RECEIPT: false,
  RM_DURING_PROVISIONING: false,
  CLUSTER_NO_PARTIAL_PROOFS: false,
  EVICT_FIRST_NODE_ONLY: false,
  TEMPLATE_REPLICAS_UNCHECKED: false,
  CLUSTER_BEHIND_ANY_OP: false,
  CLUSTER_OFFLINE_VERBS: false,
  ROTATE_WITH_NODES_UP: false,
  CLUSTER_NO_NODE_FENCE: false,
  NODE_APPLY_UNFENCED: false,
  NODE_ADMITS_PENDING_REMOVES: false,
  NODE_ASK_UNFENCED: false,
  CLUSTER_BOOT_BARE: false,
  SKIP_STORE_CHECK: false,
  UP_ANY_SPACE: false,
  CREDS_OUT_UNCHECKED: false,
  NODE_AGENT_UNLOCKED: false,
  KEEP_LOCK_TEMP: false,
  NO_BROKER_ADOPT: false,
  UP_SKIP_PORT_CHECK: false,
  DOWN_WITHOUT_STOP_INTENT: false,
  SKIP_REVOCATION: false,
  ROUTES_WITHOUT_AUTH: false,
  SKIP_SIGNING_KEY_REMOVAL: false,
  VERBS_FIRST_NODE_ONLY: false,
  REMOTE_NODE_BY_SIGNAL: false,
  NODE_PROOF_ANY_DIGEST: false,
  SIGNAL_NODES_ELSEWHERE: false,
  NODE_MATERIAL_UNPUBLISHED: false,
  AGENT_CREDS_UNRESTRICTED: false,
  UNRECORDED_NODES_IGNORED: false,
  NODE_ADD_UNPROVEN: false,
  FORGET_KEEPS_AGENT_USER: false,
  ROUTES_UNPINNED: false,
  ROTATE_STRANDS_RAFT: false,
});

/** Every switch's name, in the order of {@link Guards}. */
export const GUARD_SWITCHES: readonly GuardSwitch[] = Object.freeze(Object.keys(GUARDS_ON) as GuardSwitch[]);

/**
 * The guards an entry runs with: a switch is off only when `COTAL_TEST_UNSAFE_<NAME>` is exactly "1" (inert
 * otherwise; never set in use). Called by entries only (the CLI, the worker, the test harness), never by the core.
 */
export function guardsFromEnv(env: Readonly<Record<string, string | undefined>>): Guards {
  const off = GUARD_SWITCHES.filter((name) => env[`COTAL_TEST_UNSAFE_${name}`] === "1");
  return off.length === 0 ? GUARDS_ON : Object.freeze({ ...GUARDS_ON, ...Object.fromEntries(off.map((name) => [name, true])) });
}

/**
 * What an entry may hand the saga beside the guards (test-only knobs, docs/development.md): read from the
 * environment by the entries only, like the guards, and passed down through the verbs' options to the saga's
 * environment (SagaEnv). Absent: the saga's defaults.
 */
export interface SagaLimits {
  /** How many times a lost CAS is re-read and re-decided (COTAL_SAGA_MAX_ATTEMPTS; default 5). */
  readonly maxAttempts?: number;
  /** How long a writer waits out another's lease (COTAL_LEASE_WAIT_MS; default 30 s). */
  readonly leaseWaitMs?: number;
}

/** The saga limits an entry hands in: a variable that is not a whole number ≥ 0 (≥ 1 for the attempts) is ignored. */
export function sagaLimitsFromEnv(env: Readonly<Record<string, string | undefined>>): SagaLimits {
  const whole = (v: string | undefined, min: number): number | undefined => (v !== undefined && /^\d+$/.test(v) && Number(v) >= min ? Number(v) : undefined);
  const maxAttempts = whole(env.COTAL_SAGA_MAX_ATTEMPTS, 1);
  const leaseWaitMs = whole(env.COTAL_LEASE_WAIT_MS, 0);
  return { ...(maxAttempts !== undefined ? { maxAttempts } : {}), ...(leaseWaitMs !== undefined ? { leaseWaitMs } : {}) };
}
