// `@cotal/saga/maintenance`: the preserve-state cut and its journal, backup and restore.
export { spaceBackup, type SpaceBackupOptions, type SpaceBackupResult } from "../maintenance/backup.js";
export { spaceRestore, type SpaceRestoreOptions, type SpaceRestoreResult } from "../maintenance/restore.js";
export { cleanRestoreAttempt, type CleanAttemptResult } from "../maintenance/clean.js";
export { cleanOrphanStreams, type OrphanCleanResult } from "../maintenance/orphans.js";
export type { MaintenanceProgress } from "../maintenance/progress.js";
export { readJournal, type CutEntry } from "../journal/journal.js";
export { verifyArtifact } from "../maintenance/artifact.js";
export type { OnlineBackupResult } from "../maintenance/online-backup.js";
export { quiescedCount } from "../maintenance/quiesce.js";
export { restoreStream, snapshotStream, type RestoreOptions, type SnapshotFile, type SnapshotOptions } from "../maintenance/stream-snapshot.js";
export type { SnapshotTuning } from "../maintenance/snapshot-set.js";
