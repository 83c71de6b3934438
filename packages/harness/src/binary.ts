import { execFile } from "node:child_process";
import { constants } from "node:fs";
import { access } from "node:fs/promises";
import { delimiter, join } from "node:path";
import { HarnessError } from "./errors.js";

export interface ServerVersion {
  major: number;
  minor: number;
  patch: number;
  /** Pre-release suffix without the dash, e.g. "beta.1"; undefined for a release. */
  prerelease?: string;
  /** The version as printed, without the leading "v", e.g. "2.9.10". */
  raw: string;
}

async function executable(path: string): Promise<boolean> {
  try {
    await access(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * `NATS_SERVER_BIN` when set (and then only it: a wrong override should fail, not fall through),
 * else the first executable of /usr/bin/nats-server, /usr/sbin/nats-server, `nats-server` on PATH.
 */
export async function natsServerBinary(): Promise<string> {
  const override = process.env.NATS_SERVER_BIN;
  if (override) {
    if (await executable(override)) return override;
    throw new HarnessError("binary-missing", `NATS_SERVER_BIN=${override} is not an executable file`);
  }
  const onPath = (process.env.PATH ?? "").split(delimiter).filter(Boolean).map((d) => join(d, "nats-server"));
  for (const candidate of ["/usr/bin/nats-server", "/usr/sbin/nats-server", ...onPath]) {
    if (await executable(candidate)) return candidate;
  }
  throw new HarnessError("binary-missing", "nats-server not found (looked at NATS_SERVER_BIN, /usr/bin, /usr/sbin and PATH)");
}

const VERSION_RE = /v?(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.-]+))?/;

/** Parses `nats-server: v2.9.10` (or a bare "2.10.0-beta.1"). */
export function parseServerVersion(text: string): ServerVersion {
  const m = VERSION_RE.exec(text);
  if (!m) throw new HarnessError("invalid-argument", `no version in ${JSON.stringify(text.trim())}`);
  const raw = m[0].startsWith("v") ? m[0].slice(1) : m[0];
  const v: ServerVersion = { major: Number(m[1]), minor: Number(m[2]), patch: Number(m[3]), raw };
  if (m[4] !== undefined) v.prerelease = m[4];
  return v;
}

const versions = new Map<string, Promise<ServerVersion>>();

/** The version `bin --version` prints; cached per binary path. */
export function natsServerVersion(bin: string): Promise<ServerVersion> {
  let v = versions.get(bin);
  if (!v) {
    v = new Promise<ServerVersion>((resolve, reject) => {
      execFile(bin, ["--version"], { encoding: "utf8", timeout: 10_000 }, (err, stdout, stderr) => {
        if (err) {
          reject(new HarnessError("binary-missing", `${bin} --version failed: ${err.message}`, { cause: err }));
          return;
        }
        try {
          resolve(parseServerVersion(`${stdout}${stderr}`));
        } catch (e) {
          reject(e);
        }
      });
    });
    versions.set(bin, v);
    v.catch(() => versions.delete(bin));
  }
  return v;
}

/** `v >= min` by semver precedence (a pre-release sorts before its release). */
export function versionAtLeast(v: ServerVersion, min: string): boolean {
  const m = parseServerVersion(min);
  if (v.major !== m.major) return v.major > m.major;
  if (v.minor !== m.minor) return v.minor > m.minor;
  if (v.patch !== m.patch) return v.patch > m.patch;
  // Same x.y.z: a release satisfies anything; a pre-release only satisfies a pre-release minimum.
  if (v.prerelease === undefined) return true;
  if (m.prerelease === undefined) return false;
  return v.prerelease.localeCompare(m.prerelease, "en", { numeric: true }) >= 0;
}
