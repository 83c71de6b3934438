/** Byte progress of an offline verb; the CLI draws it as a bar on a TTY and stays quiet otherwise. */
export interface MaintenanceProgress {
  phase: "clone" | "snapshot" | "verify" | "quarantine" | "target" | "online";
  /** The stream being worked on, when the phase is per stream. */
  stream?: string;
  done: number;
  total: number;
}

export type ProgressSink = (p: MaintenanceProgress) => void;
