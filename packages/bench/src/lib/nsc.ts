import { execFile, execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { ProcessBackend, tempRoot, type ProcessBroker } from "@cotal/harness";
import { DEFAULT_JETSTREAM_BUDGET } from "@cotal/core/provision";
import type { AccountLimits } from "@cotal/core/trust";
import { onCleanup } from "./cleanup.js";
import { REPO_ROOT } from "./out.js";

const run = promisify(execFile);

/** $NSC_BIN, else the nsc infra/nsc.sh built (undefined when neither is there: the arm is skipped). */
export function nscBinary(): string | undefined {
  if (process.env.NSC_BIN) return process.env.NSC_BIN;
  try {
    const bin = execFileSync("bash", [join(REPO_ROOT, "infra", "nsc.sh"), "path"], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
    return existsSync(bin) ? bin : undefined;
  } catch {
    return undefined;
  }
}

/** The `nsc edit account` flags for cotal's default limits, so nsc's accounts get JetStream the way cotal's spaces do. */
export function nscLimitFlags(l: AccountLimits): string[] {
  return [
    ["--conns", l.conn],
    ["--leaf-conns", l.leaf],
    ["--subscriptions", l.subs],
    ["--payload", l.payload],
    ["--data", l.data],
    ["--js-mem-storage", l.mem_storage],
    ["--js-disk-storage", l.disk_storage],
    ["--js-streams", l.streams],
    ["--js-consumer", l.consumer],
  ].flatMap(([flag, v]) => [String(flag), String(v)]);
}

export interface NscBroker {
  broker: ProcessBroker;
  /** Runs `nsc -H <its home> …args`; rejects with nsc's output when it exits non-zero. */
  nsc(...args: string[]): Promise<string>;
  /** The creds file nsc generated for `user` of `account`. */
  creds(account: string, user: string): Promise<string>;
}

/**
 * An operator, its system account and user made by nsc in a throwaway home, and nats-server with the
 * config `nsc generate config --nats-resolver` prints (full resolver), made to match the other arms:
 * the same JetStream budget and sync. `allow_delete: true`, which `nsc push --account-removal` needs.
 */
export async function startNscBroker(bin: string, name: string, opts: { syncAlways: boolean }): Promise<NscBroker> {
  const home = await tempRoot(`cotal-bench-${name}-nsc-`);
  onCleanup(`remove ${home.path}`, () => home.cleanup());
  const nsc = async (...args: string[]): Promise<string> => {
    try {
      const { stdout, stderr } = await run(bin, ["-H", join(home.path, "nsc"), ...args], { maxBuffer: 1 << 26, env: { ...process.env, NKEYS_PATH: join(home.path, "nsc", "keys") } });
      return stdout + stderr;
    } catch (e) {
      const err = e as { stdout?: string; stderr?: string; message: string };
      // the end of nsc's output holds its error: keep that, not the first lines of a long push log
      throw new Error(`nsc ${args.join(" ")} failed: ${`${err.stdout ?? ""}${err.stderr ?? ""}`.slice(-4000)}`);
    }
  };
  await nsc("add", "operator", "--generate-signing-key", "--sys", "--name", name);
  const jwtDir = join(home.path, "jwt");
  await mkdir(jwtDir, { recursive: true, mode: 0o700 });
  const resolver = (await run(bin, ["-H", join(home.path, "nsc"), "generate", "config", "--nats-resolver", "--sys-account", "SYS"], { env: { ...process.env, NKEYS_PATH: join(home.path, "nsc", "keys") } })).stdout
    .replace(/dir: '\.\/jwt'/, `dir: "${jwtDir}"`)
    .replace(/allow_delete: false/, "allow_delete: true");
  if (!resolver.includes(jwtDir) || !resolver.includes("allow_delete: true")) throw new Error(`nsc generate config printed an unexpected resolver block:\n${resolver}`);
  const config = [
    `server_name: ${name}`,
    "listen: {{HOST}}:{{PORT}}",
    `jetstream { store_dir: "{{STORE_DIR}}", max_file_store: ${DEFAULT_JETSTREAM_BUDGET.maxFileStore}, max_memory_store: ${DEFAULT_JETSTREAM_BUDGET.maxMemoryStore}${opts.syncAlways ? ", sync_interval: always" : ""} }`,
    resolver,
  ].join("\n");
  const broker = await new ProcessBackend().start({ config, name });
  onCleanup(`dispose the ${name} broker`, () => broker.dispose());
  const creds = async (account: string, user: string): Promise<string> => {
    await nsc("add", "user", "--account", account, "--name", user);
    const file = join(home.path, `${account}-${user}.creds`);
    await nsc("generate", "creds", "--account", account, "--name", user, "--output-file", file);
    return readFile(file, "utf8");
  };
  return { broker, nsc, creds };
}
