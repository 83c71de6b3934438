import { readFileSync } from "node:fs";
import { parseQuota, type SpaceQuota } from "@cotal/core/light";
import { usageError } from "@cotal/core/errors";

/** The limit flags `space add` and `space limits` share; each maps to one SpaceQuota field. */
export const QUOTA_FLAGS = [
  ["--max-disk <size>", "JetStream file storage, e.g. 256M, 1G", "maxDisk", "disk"],
  ["--max-mem <size>", "JetStream memory storage, e.g. 16M", "maxMem", "mem"],
  ["--max-streams <n>", "streams (KV buckets count as streams)", "maxStreams", "streams"],
  ["--max-consumers <n>", "consumers", "maxConsumers", "consumers"],
  ["--max-conns <n>", "client connections", "maxConns", "conns"],
  ["--max-subs <n>", "subscriptions", "maxSubs", "subs"],
  ["--max-payload <size>", "message payload, at most 1M", "maxPayload", "payload"],
  ["--max-leafnodes <n>", "leaf node connections", "maxLeafnodes", "leafnodes"],
] as const;

export type QuotaFlagValues = { limits?: string } & { [K in (typeof QUOTA_FLAGS)[number][2]]?: string };

/** `--limits FILE` (a JSON object of SpaceQuota fields) overlaid with the single-limit flags; all checked. */
export function quotaFromFlags(flags: QuotaFlagValues): Partial<SpaceQuota> {
  let fromFile: Partial<SpaceQuota> = {};
  if (flags.limits !== undefined) {
    let raw: unknown;
    try {
      raw = JSON.parse(readFileSync(flags.limits, "utf8"));
    } catch (err) {
      throw usageError(`cannot read limits from ${flags.limits}: ${(err as Error).message}`, `write a JSON object such as {"disk": "256M", "conns": 64} to ${flags.limits}`);
    }
    if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
      throw usageError(`${flags.limits} must hold a JSON object of limits`, `write a JSON object such as {"disk": "256M", "conns": 64} to ${flags.limits}`);
    }
    fromFile = parseQuota(raw as Record<string, unknown>, flags.limits);
  }
  const fromFlags: Record<string, unknown> = {};
  for (const [, , key, field] of QUOTA_FLAGS) if (flags[key] !== undefined) fromFlags[field] = flags[key];
  const flagOf = (f: keyof SpaceQuota): string => QUOTA_FLAGS.find((q) => q[3] === f)?.[0].split(" ")[0] ?? f;
  return { ...fromFile, ...parseQuota(fromFlags, "flags", flagOf) };
}
