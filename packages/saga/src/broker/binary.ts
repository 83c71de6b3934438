import { execFileSync } from "node:child_process";
import { accessSync, constants } from "node:fs";
import { delimiter, join } from "node:path";
import { SagaError } from "../errors.js";

export interface ServerVersion {
  major: number;
  minor: number;
  patch: number;
  raw: string;
}

/** `NATS_SERVER_BIN`, then Debian's path, then PATH. */
export function natsServerBinary(): string {
  const candidates = [process.env.NATS_SERVER_BIN, "/usr/bin/nats-server", "/usr/sbin/nats-server", ...(process.env.PATH ?? "").split(delimiter).map((d) => join(d, "nats-server"))];
  for (const c of candidates) {
    if (!c) continue;
    try {
      accessSync(c, constants.X_OK);
      return c;
    } catch {
      // try the next one
    }
  }
  throw new SagaError("nats-server-missing", "nats-server was not found (looked at NATS_SERVER_BIN, /usr/bin, /usr/sbin and PATH)", {
    exit: "apt-get install -y nats-server   # or set NATS_SERVER_BIN=/path/to/nats-server",
  });
}

export function parseServerVersion(text: string): ServerVersion {
  const m = /v?(\d+)\.(\d+)\.(\d+)/.exec(text);
  if (!m) throw new SagaError("nats-server-missing", `cannot read a version from ${JSON.stringify(text.trim())}`);
  return { major: Number(m[1]), minor: Number(m[2]), patch: Number(m[3]), raw: m[0].startsWith("v") ? m[0].slice(1) : m[0] };
}

const versions = new Map<string, ServerVersion>();

export function natsServerVersion(bin = natsServerBinary()): ServerVersion {
  let v = versions.get(bin);
  if (!v) {
    v = parseServerVersion(execFileSync(bin, ["--version"], { encoding: "utf8" }));
    versions.set(bin, v);
  }
  return v;
}

export function versionAtLeast(v: ServerVersion, min: string): boolean {
  const m = parseServerVersion(min);
  if (v.major !== m.major) return v.major > m.major;
  if (v.minor !== m.minor) return v.minor > m.minor;
  return v.patch >= m.patch;
}

/** Features newer servers have and 2.9.10 lacks; everything cotal renders must work without them. */
export interface ServerCapabilities {
  /** `jetstream { sync_interval: always }` (2.10+): fsync every write, closing the OS-crash window of SPEC §4. */
  syncAlways: boolean;
}

export function serverCapabilities(v: ServerVersion): ServerCapabilities {
  return { syncAlways: versionAtLeast(v, "2.10.0") };
}
