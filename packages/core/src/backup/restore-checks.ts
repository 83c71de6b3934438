/**
 * What an online restore checks before it quiesces or deletes anything (docs/backup.md, "Before the
 * point of no return"): the namespace is empty (or --replace names what goes), and the artifact fits
 * the tenant's quota once the streams it replaces are gone. Pure: the caller reads the server.
 */
import type { StreamInfo } from "@nats-io/jetstream";
import { CotalError } from "../errors.js";
import type { BackupManifest } from "./artifact.js";
import { replaceable } from "./restore-streams.js";

/** Every stream that makes the namespace not empty: anything but a ttl bucket or a fresh, never-used template stream. */
export function occupiedStreams(existing: readonly StreamInfo[], m: Pick<BackupManifest, "space" | "excluded">): StreamInfo[] {
  const ttl = m.excluded.map((e) => e.name);
  return existing.filter((i) => !replaceable(i, m.space, ttl));
}

/** Bytes a stream of the artifact takes once restored: its start state, plus its growth during a live snapshot at its average message size. */
export function restoredBytes(s: BackupManifest["streams"][number]): number {
  if (s.grewTo === undefined || s.grewTo <= s.state.last_seq) return s.state.bytes;
  const perMessage = s.state.messages > 0 ? s.state.bytes / s.state.messages : 0;
  return Math.ceil(s.state.bytes + (s.grewTo - s.state.last_seq) * perMessage);
}

/** The account's JetStream figures as `$JS.API.INFO` reports them (nats.js AccountInfoResponse, the parts used here). */
export interface AccountUsage {
  storage: number;
  streams: number;
  limits: { max_storage: number; max_streams: number };
}

/**
 * Refuses, naming the figures, an artifact that would not fit the tenant's quota: what the account
 * stores now, less the streams the restore replaces, plus the artifact's streams, against max_storage
 * (and the stream count against max_streams). `next` is the caller's way out (raise the quota, then run it again).
 */
export function assertRestoreFits(usage: AccountUsage, existing: readonly StreamInfo[], m: Pick<BackupManifest, "space" | "streams">, replicas: number, next: (flag: "--max-disk" | "--max-streams", value: number) => string): void {
  const named = new Set(m.streams.map((s) => s.name));
  const replaced = existing.filter((i) => named.has(i.config.name));
  const freed = replaced.reduce((n, i) => n + i.state.bytes * Math.max(1, i.config.num_replicas ?? 1), 0);
  const incoming = m.streams.reduce((n, s) => n + restoredBytes(s) * replicas, 0);
  const need = Math.max(0, usage.storage - freed) + incoming;
  const limit = usage.limits.max_storage;
  if (limit >= 0 && need > limit) {
    throw new CotalError("quota-overcommit", `the backup of space ${m.space} needs ${incoming} bytes; with the ${Math.max(0, usage.storage - freed)} bytes its other streams keep that is ${need} bytes, over its disk quota of ${limit} bytes; nothing was changed`, {
      next: next("--max-disk", need),
      details: { need, limit, incoming, kept: Math.max(0, usage.storage - freed) },
    });
  }
  const streams = usage.streams - replaced.length + m.streams.length;
  if (usage.limits.max_streams >= 0 && streams > usage.limits.max_streams) {
    throw new CotalError("quota-overcommit", `the backup of space ${m.space} brings ${m.streams.length} stream(s); with the ones it keeps that is ${streams}, over its quota of ${usage.limits.max_streams}; nothing was changed`, {
      next: next("--max-streams", streams),
      details: { streams, limit: usage.limits.max_streams },
    });
  }
}
