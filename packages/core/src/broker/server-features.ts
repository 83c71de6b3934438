import { CotalError } from "../errors.js";

export interface ServerVersion {
  major: number;
  minor: number;
  patch: number;
  /** Pre-release suffix without the dash ("RC.1"); undefined for a release. */
  prerelease?: string;
  /** As printed, without the leading "v": "2.9.10". */
  raw: string;
}

const VERSION_RE = /v?(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.-]+))?/;

/** Reads `nats-server: v2.9.10` (or a bare "2.15.0-RC.1"). */
export function parseServerVersion(text: string): ServerVersion {
  const m = VERSION_RE.exec(text);
  if (!m) throw new CotalError("nats-server-missing", `cannot read a version from ${JSON.stringify(text.trim())}`);
  const raw = m[0].startsWith("v") ? m[0].slice(1) : m[0];
  return { major: Number(m[1]), minor: Number(m[2]), patch: Number(m[3]), raw, ...(m[4] !== undefined ? { prerelease: m[4] } : {}) };
}

/** `v >= min`; a pre-release sorts below its release, so an RC never earns a gate its release introduced. */
export function versionAtLeast(v: ServerVersion, min: string): boolean {
  const m = parseServerVersion(min);
  if (v.major !== m.major) return v.major > m.major;
  if (v.minor !== m.minor) return v.minor > m.minor;
  if (v.patch !== m.patch) return v.patch > m.patch;
  if (v.prerelease === undefined) return true;
  // RC.10 follows RC.9: pre-release tags compare with their numbers as numbers.
  return m.prerelease !== undefined && v.prerelease.localeCompare(m.prerelease, "en", { numeric: true }) >= 0;
}

/**
 * What a nats-server version offers cotal: the one home of every version gate (README: Server
 * versions). Each gate names the first release that has it; 2.9.10 has none of them.
 */
export interface ServerFeatures {
  version: string;
  /** `jetstream { sync_interval: always }` (2.10.0): fsync every write, closing the OS-crash window (docs/resume.md, row 6). */
  syncAlways: boolean;
  /** `$SYS.REQ.SERVER.<id>.RELOAD` (2.10.0): a reload whose reply is the proof, or the server's error text. */
  reloadRequest: boolean;
  /** `config_digest` in VARZ and in the "Reloaded server configuration (…)" line (2.11.0). */
  configDigest: boolean;
  /**
   * A reload keeps connected JWT clients that sent an nkey, i.e. every nats.js creds client
   * (nats-server PR #8609, first shipped in 2.14.8 and 2.15.0). Older servers drop them all.
   */
  reloadKeepsJwtClients: boolean;
  /** `$SYS.REQ.SERVER.<id>.KICK` (2.10.0): the evictor cuts a removed tenant's connections at once. */
  kick: boolean;
  /**
   * JSZ `stream_raft_group` (asked with `raft`, 2.10.4): whether a stream runs under its meta-layer
   * assignment. Before it an unassigned R1 stream reads like an assigned one (ops/node-streams.ts).
   */
  jszStreamGroup: boolean;
}

export const FEATURE_SINCE = {
  syncAlways: "2.10.0",
  reloadRequest: "2.10.0",
  configDigest: "2.11.0",
  reloadKeepsJwtClients: "2.14.8",
  kick: "2.10.0",
  jszStreamGroup: "2.10.4",
} as const satisfies Record<Exclude<keyof ServerFeatures, "version">, string>;

export function serverFeatures(version: ServerVersion | string): ServerFeatures {
  const v = typeof version === "string" ? parseServerVersion(version) : version;
  return {
    version: v.raw,
    syncAlways: versionAtLeast(v, FEATURE_SINCE.syncAlways),
    reloadRequest: versionAtLeast(v, FEATURE_SINCE.reloadRequest),
    configDigest: versionAtLeast(v, FEATURE_SINCE.configDigest),
    reloadKeepsJwtClients: versionAtLeast(v, FEATURE_SINCE.reloadKeepsJwtClients),
    kick: versionAtLeast(v, FEATURE_SINCE.kick),
    jszStreamGroup: versionAtLeast(v, FEATURE_SINCE.jszStreamGroup),
  };
}
