// `@cotal/saga`: the verbs and what they return, the error contract, the space-name rule and the
// root's layout — what the CLI, the jobs and the worker call. Lower layers have their own entries
// (package.json "exports"): ./errors ./trust ./root ./broker ./inventory ./provision ./maintenance
// ./testing. Every name is listed here on purpose: no `export *` (test/entries.test.ts).

// the error contract
export { RERUN, SAGA_ERROR_CODES, CotalError, afterPid, isCotalError, rerunWith, type ErrorCode, type SagaErrorCode, type CotalErrorOptions } from "./errors.js";
export { ERROR_TABLE, EXIT, errorEntry, type ErrorEntry, type ExitCode } from "./error-table.js";
export { describeError, errorDocument, type ErrorShape, type ReportContext } from "./error-shape.js";

// names and the root
export { SPACE_NAME_RULE, assertSpaceName, isValidSpaceName, spaceHex } from "./names.js";
export { RootLayout, resolveRoot } from "./root/layout.js";

// the broker verbs
export { up, type UpOptions, type UpResult } from "./ops/up.js";
export { down, type DownResult } from "./ops/down.js";
export { status, type SpaceStatus, type StatusReport } from "./ops/status.js";
export type { JournalEntry } from "./journal/journal.js";
export type { PendingMutation } from "./inventory/record.js";
export { brokerState, clearRuntime, type BrokerRuntime, type BrokerState } from "./broker/runtime.js";
export { leaseKeyFor, type SessionHooks } from "./verb/session.js";
export { reconcile, type Direction, type ReconcileOptions, type ReconcilePlan, type ReconcileReport, type ReconcileResult } from "./ops/reconcile.js";
export { rotateSys, type RotateSysResult } from "./ops/rotate-sys.js";
export { runNodeAgent, type NodeAgentOptions, type NodeAgentResult } from "./ops/node-agent.js";

// the space verbs
export { spaceAdd, validateBatch, type SpaceAddOptions, type SpaceAddResult } from "./ops/space-add.js";
export { spaceRm, type SpaceRmOptions, type SpaceRmResult } from "./ops/space-rm.js";
export { spaceList, spaceListFrom, type SpaceListEntry, type SpaceListReport, type SpaceState } from "./ops/space-list.js";
export { showSpaceLimits, spaceLimits, type SpaceLimitsOptions, type SpaceLimitsResult } from "./ops/space-limits.js";
export { percentOf, spaceEntry, spaceInfo, spaceInfoFrom, usageRows, type SpaceCredsFile, type SpaceInfo, type SpaceInfoOptions, type SpaceUsage, type UsageRow } from "./ops/space-info.js";
export { mintSpaceCreds, type CredsOptions, type CredsResult } from "./ops/creds.js";
export { QUOTA_FIELDS, UNLIMITED_JETSTREAM, formatBytes, parseQuota, type AccountLimits, type SpaceQuota } from "./trust/limits.js";
export type { SagaTiming } from "./saga/steps.js";

// backup, restore and clean-up verbs
export { spaceBackup, type SpaceBackupOptions, type SpaceBackupResult } from "./maintenance/backup.js";
export { spaceRestore, type SpaceRestoreOptions, type SpaceRestoreResult } from "./maintenance/restore.js";
export { type OnlineRestoreResult } from "./maintenance/online-restore.js";
export { checkBackupOut, checkRestoreFrom, checkScheduleDir, spaceStoreBytes, type PathCheckOptions } from "./maintenance/artifact-paths.js";
export { cleanRestoreAttempt, type CleanAttemptResult } from "./maintenance/clean.js";
export { cleanOrphanStreams, type OrphanCleanResult } from "./maintenance/orphans.js";
export type { MaintenanceProgress } from "./maintenance/progress.js";

// small shared helpers
export { FAILPOINTS, FAILPOINT_EXIT_CODE } from "./failpoints.js";
export { redactSeeds } from "./redact.js";
export { mapPool } from "./pool.js";

// the guards and saga limits an entry hands in (docs/ablation.md): only entries call guardsFromEnv and sagaLimitsFromEnv
export { GUARDS_ON, guardsFromEnv, sagaLimitsFromEnv, type Guards, type GuardSwitch, type SagaLimits } from "./guards.js";
