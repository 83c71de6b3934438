import { execFileSync } from "node:child_process";
import { accessSync, constants } from "node:fs";
import { delimiter, join } from "node:path";
import { SagaError } from "../errors.js";
import { parseServerVersion, type ServerVersion } from "./server-features.js";

/** `NATS_SERVER_BIN` when set (and then only it: a mistyped override must not fall back to another version), else Debian's path, else PATH. */
export function natsServerBinary(): string {
  const override = process.env.NATS_SERVER_BIN;
  const candidates = override ? [override] : ["/usr/bin/nats-server", "/usr/sbin/nats-server", ...(process.env.PATH ?? "").split(delimiter).filter(Boolean).map((d) => join(d, "nats-server"))];
  for (const c of candidates) {
    try {
      accessSync(c, constants.X_OK);
      return c;
    } catch {
      // try the next one
    }
  }
  if (override) {
    throw new SagaError("nats-server-missing", `NATS_SERVER_BIN=${override} is not an executable file`, {
      next: "unset NATS_SERVER_BIN, or point it at a nats-server binary (README: Server versions)",
    });
  }
  throw new SagaError("nats-server-missing", "nats-server was not found (looked at NATS_SERVER_BIN, /usr/bin, /usr/sbin and PATH)", {
    next: "apt-get install -y nats-server   # or set NATS_SERVER_BIN=/path/to/nats-server",
  });
}

const versions = new Map<string, ServerVersion>();

/** Read once per binary path: `--version` of the binary that runs (or will run) the broker. */
export function natsServerVersion(bin = natsServerBinary()): ServerVersion {
  let v = versions.get(bin);
  if (!v) {
    v = parseServerVersion(execFileSync(bin, ["--version"], { encoding: "utf8" }));
    versions.set(bin, v);
  }
  return v;
}
