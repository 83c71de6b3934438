import { execFileSync } from "node:child_process";
import { accessSync, constants } from "node:fs";
import { delimiter, join } from "node:path";
import { SagaError } from "../errors.js";
import { parseServerVersion, type ServerVersion } from "./server-features.js";

/** Where a distribution puts nats-server (Debian: /usr/sbin), tried before PATH. */
export const NATS_SERVER_PATHS: readonly string[] = ["/usr/bin/nats-server", "/usr/sbin/nats-server"];

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * `NATS_SERVER_BIN` when set (and then only it: a mistyped override must not fall back to another
 * version, so it is refused naming the path), else the first executable of `paths`, else PATH.
 * The core and the harness both resolve through here.
 */
export function natsServerBinary(env: NodeJS.ProcessEnv = process.env, paths: readonly string[] = NATS_SERVER_PATHS): string {
  const override = env.NATS_SERVER_BIN;
  if (override) {
    if (executable(override)) return override;
    throw new SagaError("nats-server-missing", `NATS_SERVER_BIN=${override} is not an executable file`, {
      next: "unset NATS_SERVER_BIN, or point it at a nats-server binary (README: Server versions)",
      details: { path: override },
    });
  }
  const onPath = (env.PATH ?? "").split(delimiter).filter(Boolean).map((d) => join(d, "nats-server"));
  const found = [...paths, ...onPath].find(executable);
  if (found) return found;
  throw new SagaError("nats-server-missing", `nats-server was not found (looked at NATS_SERVER_BIN, ${paths.join(", ")} and PATH)`, {
    next: "apt-get install -y nats-server   # or set NATS_SERVER_BIN=/path/to/nats-server",
  });
}

const versions = new Map<string, ServerVersion>();

/** Read once per binary path: `--version` of the binary that runs (or will run) the broker. */
export function natsServerVersion(bin = natsServerBinary()): ServerVersion {
  let v = versions.get(bin);
  if (!v) {
    let out: string;
    try {
      out = execFileSync(bin, ["--version"], { encoding: "utf8", timeout: 10_000, stdio: ["ignore", "pipe", "pipe"] });
    } catch (err) {
      throw new SagaError("nats-server-missing", `${bin} --version failed: ${(err as Error).message}`, {
        next: "point NATS_SERVER_BIN at a working nats-server binary",
        details: { path: bin },
      });
    }
    v = parseServerVersion(out);
    versions.set(bin, v);
  }
  return v;
}
