import { execFileSync } from "node:child_process";
import { accessSync, constants, readdirSync } from "node:fs";
import { delimiter, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { CotalError } from "../errors.js";
import { shellWord } from "../error-shape.js";
import { parseServerVersion, versionAtLeast, type ServerVersion } from "./server-features.js";

/** Where a distribution puts nats-server (Debian: /usr/sbin), tried before PATH. */
export const NATS_SERVER_PATHS: readonly string[] = ["/usr/bin/nats-server", "/usr/sbin/nats-server"];

/** Where `infra/nats-server.sh install` puts each pinned release it built: `<checkout>/.tools/nats-server/<version>/nats-server`. */
const TOOLS_SERVERS = join(".tools", "nats-server");

/**
 * The releases the set-up built beside this install, newest first: the nearest ancestor of this module
 * holding `.tools/nats-server/` (the checkout the CLI runs from, bundled or not). An install without one
 * (a packed tarball, a container) has none, and falls back to the distribution's server.
 */
export function builtServers(from: string = fileURLToPath(import.meta.url)): string[] {
  for (let dir = dirname(from); ; dir = dirname(dir)) {
    const tools = join(dir, TOOLS_SERVERS);
    let versions: string[] | undefined;
    try {
      versions = readdirSync(tools).filter((v) => /^\d+\.\d+\.\d+$/.test(v));
    } catch {
      // no tools here: look further up
    }
    if (versions) {
      const newestFirst = versions.map((v) => parseServerVersion(v)).sort((a, b) => (a.raw === b.raw ? 0 : versionAtLeast(a, b.raw) ? -1 : 1));
      return newestFirst.map((v) => join(tools, v.raw, "nats-server")).filter(executable);
    }
    if (dirname(dir) === dir) return [];
  }
}

/** The default server (docs/server-versions.md): the newest pinned release the set-up built, else the distribution's. */
export function defaultServerCandidates(): string[] {
  return [...builtServers(), ...NATS_SERVER_PATHS];
}

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
 * version, so it is refused naming the path), else the first executable of `paths` (the newest built
 * release, then the distribution's), else PATH. The core and the harness both resolve through here.
 */
export function natsServerBinary(env: NodeJS.ProcessEnv = process.env, paths: readonly string[] = defaultServerCandidates()): string {
  const override = env.NATS_SERVER_BIN;
  if (override) {
    if (executable(override)) return override;
    throw new CotalError("nats-server-missing", `NATS_SERVER_BIN=${override} is not an executable file`, {
      next: "unset NATS_SERVER_BIN   # then the newest release the set-up built runs, or point it at a nats-server binary (docs/server-versions.md)",
      details: { path: override },
    });
  }
  const onPath = (env.PATH ?? "").split(delimiter).filter(Boolean).map((d) => join(d, "nats-server"));
  const found = [...paths, ...onPath].find(executable);
  if (found) return found;
  throw new CotalError("nats-server-missing", `nats-server was not found (looked at NATS_SERVER_BIN, ${paths.join(", ") || "the set-up's builds"} and PATH)`, {
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
      throw new CotalError("nats-server-missing", `${bin} --version failed: ${(err as Error).message}`, {
        next: `${shellWord(bin)} --version   # must print its version; else point NATS_SERVER_BIN at a working nats-server (docs/server-versions.md)`,
        details: { path: bin },
      });
    }
    v = parseServerVersion(out);
    versions.set(bin, v);
  }
  return v;
}
