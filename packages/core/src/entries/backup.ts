// @cotal/core/backup: what the jobs, the CLI and benchmarks use beside the backup verbs (journal reader, artifact check, quiesce count, stream snapshots).
export { readJournal, type CutEntry } from "../journal/journal.js";
export { verifyArtifact } from "../backup/artifact.js";
export type { OnlineBackupResult } from "../backup/online-backup.js";
export { quiescedCount } from "../backup/quiesce.js";
export { restoreStream, snapshotStream, type RestoreOptions, type SnapshotFile } from "../backup/stream-snapshot.js";
export type { SnapshotTuning } from "../backup/snapshot-set.js";
