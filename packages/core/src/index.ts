// @cotal/core: the verbs, their results and the error contract, which the CLI, the jobs, the worker and the dashboard call.

// the error contract (also ./errors, without nats.js)
export { RERUN, CotalError, isCotalError } from "./errors.js";
export { describeError } from "./error-shape.js";

// names and the root
export { spaceHex } from "./names.js";
export { RootLayout } from "./root/layout.js";

// the broker verbs
export { up, type UpResult } from "./ops/up.js";
export { down } from "./ops/down.js";
export { status, type StatusReport } from "./ops/status.js";
export type { JournalEntry } from "./journal/journal.js";
export type { PendingMutation } from "./inventory/record.js";
export { brokerState, clearRuntime } from "./broker/runtime.js";
export { leaseKeyFor } from "./verb/session.js";
export { reconcile, type ReconcilePlan, type ReconcileReport } from "./ops/reconcile.js";
export { rotateSys, type RotateSysResult } from "./ops/rotate-sys.js";
export { runNodeAgent, type NodeAgentResult } from "./ops/node-agent.js";
export { bundleNode } from "./ops/node-bundle.js";
export { nodeAdd, type NodeAddResult } from "./ops/node-add.js";
export { nodeForget, type NodeForgetResult } from "./ops/node-forget.js";

// the space verbs
export { spaceAdd, validateBatch, type SpaceAddOptions, type SpaceAddResult } from "./ops/space-add.js";
export { spaceRm, type SpaceRmResult } from "./ops/space-rm.js";
export { spaceList, spaceListFrom, type SpaceListEntry, type SpaceListReport } from "./ops/space-list.js";
export { followCommits } from "./verb/follow.js";
export { showSpaceLimits, spaceLimits } from "./ops/space-limits.js";
export { spaceInfo, type SpaceInfo, type UsageRow } from "./ops/space-info.js";
export { spaceUsages, type SpaceUsageRow } from "./ops/space-usages.js";
export { mintSpaceCreds } from "./ops/creds.js";
export { spaceRevoke, type SpaceRevokeResult } from "./ops/space-revoke.js";
export { spaceRotateKey, type SpaceRotateKeyResult } from "./ops/space-rotate-key.js";
export { spaceUsers, type SpaceUsersReport } from "./ops/space-users.js";
export { UNLIMITED_JETSTREAM } from "./trust/limits.js";
export type { SagaPhase, SagaTiming } from "./saga/steps.js";
export type { MutationResult } from "./saga/mutation.js";

// backup, restore and clean-up verbs
export { spaceBackup, type SpaceBackupResult } from "./backup/backup.js";
export { spaceRestore, type SpaceRestoreResult } from "./backup/restore.js";
export { type OnlineRestoreResult } from "./backup/online-restore.js";
export { checkRestoreFrom, checkScheduleDir, spaceStoreBytes } from "./backup/artifact-paths.js";
export { cleanRestoreAttempt } from "./backup/clean.js";
export { cleanOrphanStreams } from "./backup/orphans.js";
export type { MaintenanceProgress } from "./backup/progress.js";

// small shared helpers
export { FAILPOINT_EXIT_CODE } from "./failpoints.js";
export { redactSeeds } from "./redact.js";
export { mapPool } from "./pool.js";

