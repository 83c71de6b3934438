import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { ProcessBackend, tempRoot, type ProcessBroker } from "@cotal/harness";
import { connectWithCreds, serverFeatures } from "@cotal/core/broker";
import { natsServerBinary, natsServerVersion } from "@cotal/core/server-process";
import { DEFAULT_JETSTREAM_BUDGET, DEFAULT_SPACE_QUOTA } from "@cotal/core/provision";
import { toAccountRecord, type AccountRecord } from "@cotal/core/root";
import { createAccountTrust, createBrokerTrust, mintSystemUserCreds, quotaLimits, type AccountLimits, type BrokerTrust } from "@cotal/core/trust";
import { onCleanup } from "./cleanup.js";

/** The limits cotal's spaceAdd signs into a new space's JWT by default (no --max-* flags). */
export const DEFAULT_LIMITS: AccountLimits = quotaLimits(DEFAULT_SPACE_QUOTA);

/**
 * Whether cotal's broker on this machine's nats-server (the one `up` and the peers start) gets
 * `jetstream { sync_interval: always }`: from 2.10.0, where the option exists (render/server-config.ts).
 */
export function cotalSyncsAlways(): boolean {
  return serverFeatures(natsServerVersion(natsServerBinary())).syncAlways;
}

/**
 * What a broker fsyncs, for the bench's notes. nats-server writes a full resolver's JWT files without
 * fsync (DirJWTStore: os.WriteFile) and has no setting for it; cotal fsyncs each record it writes.
 */
export function jetStreamSyncNote(syncAlways: boolean): string {
  return syncAlways ? "JetStream: sync_interval always (every store write fsynced)" : "JetStream: nats-server's default sync (fsync every 2 min)";
}

/** A full-resolver broker's durability settings. */
export interface PeerOptions {
  /** `jetstream { sync_interval: always }`; the fair peer takes cotal's setting (cotalSyncsAlways). */
  syncAlways: boolean;
  /** `allow_delete: true` in the resolver, so $SYS.REQ.CLAIMS.DELETE works (one-add.ts's removal). */
  allowDelete?: boolean;
}

export interface PeerBroker {
  broker: ProcessBroker;
  syncAlways: boolean;
  trust: BrokerTrust;
  /** An account preloaded at start (the survivor of onboarding). */
  preloaded: AccountRecord;
  /** Mints each account (cotal's default limits) and pushes its JWT over $SYS.REQ.CLAIMS.UPDATE, `window` in flight. */
  push(names: readonly string[], window?: number): Promise<AccountRecord[]>;
  /** A fresh system user's creds (for a scripted peer in its own process). */
  sysCreds(): string;
}

/**
 * nats-server with `resolver: { type: full }`: trust changes are $SYS.REQ.CLAIMS.UPDATE requests,
 * no config file, no reload (the full-resolver peer of BENCHMARKS.md).
 */
export async function startPeerBroker(name: string, opts: PeerOptions): Promise<PeerBroker> {
  const trust = createBrokerTrust({ name, retainSystemSigningSeed: true });
  const jwtDir = await tempRoot(`cotal-bench-${name}-jwt-`);
  onCleanup(`remove ${jwtDir.path}`, () => jwtDir.cleanup());
  await mkdir(join(jwtDir.path, "jwt"), { recursive: true, mode: 0o700 });
  const preloaded = toAccountRecord(createAccountTrust(trust.operator, "survivor", { kind: "space", limits: DEFAULT_LIMITS }));
  const config = [
    `server_name: ${name}`,
    "listen: {{HOST}}:{{PORT}}",
    // cotal's default server-wide max: each account's quota is reserved against it, and the dynamic
    // max (a share of the free disk) runs out near 900 tenants of 64 MiB here.
    `jetstream { store_dir: "{{STORE_DIR}}", max_file_store: ${DEFAULT_JETSTREAM_BUDGET.maxFileStore}, max_memory_store: ${DEFAULT_JETSTREAM_BUDGET.maxMemoryStore}${opts.syncAlways ? ", sync_interval: always" : ""} }`,
    `operator: "${trust.operator.jwt}"`,
    `system_account: ${trust.system.publicKey}`,
    `resolver: { type: full, dir: "${join(jwtDir.path, "jwt")}", allow_delete: ${opts.allowDelete === true} }`,
    "resolver_preload: {",
    `  ${trust.system.publicKey}: "${trust.system.jwt}"`,
    `  ${preloaded.publicKey}: "${preloaded.jwt}"`,
    "}",
    "",
  ].join("\n");
  const broker = await new ProcessBackend().start({ config, name });
  onCleanup(`dispose the ${name} broker`, () => broker.dispose());
  const sys = await connectWithCreds(broker.url, mintSystemUserCreds(trust.system, { name: "claims-pusher" }).creds, { name: "bench-claims" });
  onCleanup("close the $SYS connection", () => sys.close());
  const push = async (names: readonly string[], window = 64): Promise<AccountRecord[]> => {
    const accounts: AccountRecord[] = [];
    let next = 0;
    const worker = async (): Promise<void> => {
      for (;;) {
        const i = next++;
        if (i >= names.length) return;
        const rec = toAccountRecord(createAccountTrust(trust.operator, names[i] as string, { kind: "space", limits: DEFAULT_LIMITS }));
        accounts[i] = rec;
        const reply = await sys.request("$SYS.REQ.CLAIMS.UPDATE", rec.jwt, { timeout: 10_000 });
        const body = reply.json<{ data?: { code?: number }; error?: { code?: number; description?: string } }>();
        if (body.data?.code !== 200) throw new Error(`claim update of ${rec.name}: ${JSON.stringify(body.error ?? body)}`);
      }
    };
    await Promise.all(Array.from({ length: Math.min(window, names.length) }, worker));
    return accounts;
  };
  return { broker, syncAlways: opts.syncAlways, trust, preloaded, push, sysCreds: () => mintSystemUserCreds(trust.system, { name: "peer-one" }).creds };
}
