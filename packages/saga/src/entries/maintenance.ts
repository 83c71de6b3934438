// @cotal/saga/maintenance: what the jobs, the CLI and benchmarks use beside the backup verbs (journal reader, artifact check, quiesce count, stream snapshots).
export { readJournal, type CutEntry } from "../journal/journal.js";
export { verifyArtifact } from "../maintenance/artifact.js";
export type { OnlineBackupResult } from "../maintenance/online-backup.js";
export { quiescedCount } from "../maintenance/quiesce.js";
export { restoreStream, snapshotStream, type RestoreOptions, type SnapshotFile } from "../maintenance/stream-snapshot.js";
export type { SnapshotTuning } from "../maintenance/snapshot-set.js";
