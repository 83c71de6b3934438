import { execFile } from "node:child_process";
import { constants } from "node:fs";
import { access } from "node:fs/promises";
import { delimiter, join } from "node:path";
import { HarnessError } from "./errors.js";

// One parser and one comparison for versions, the core's (broker/server-features.ts).
import { parseServerVersion, type ServerVersion } from "@cotal/saga/broker";
export { parseServerVersion, versionAtLeast, type ServerVersion } from "@cotal/saga/broker";

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
