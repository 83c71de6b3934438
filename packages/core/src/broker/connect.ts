import { connect, type NatsConnection } from "@nats-io/transport-node";
import { CotalError } from "../errors.js";
import { mintUserCreds, nativeCredsAuthenticator, type UserCredsOptions } from "../trust/index.js";
import type { AccountRecord } from "../root/records.js";

export interface ConnectOptions {
  name: string;
  timeoutMs?: number;
  /** Keep reconnecting across reloads (every reload drops every JWT client on 2.9.10). */
  reconnect?: boolean;
}

export async function connectWithCreds(url: string | readonly string[], creds: string, opts: ConnectOptions): Promise<NatsConnection> {
  try {
    return await connect({
      servers: typeof url === "string" ? url : [...url],
      // Several servers (a cluster's nodes, stopped ones left out): in order, not shuffled, the first that answers.
      noRandomize: true,
      name: opts.name,
      authenticator: nativeCredsAuthenticator(creds),
      timeout: opts.timeoutMs ?? 5_000,
      reconnect: opts.reconnect ?? true,
      maxReconnectAttempts: opts.reconnect === false ? 0 : -1,
      // Every reload drops us (2.9.10) and the saga waits for the reconnect before its proof CAS: keep it short.
      reconnectTimeWait: 10,
      reconnectJitter: 5,
    });
  } catch (err) {
    throw new CotalError("broker-unreachable", `cannot connect to ${url} as ${opts.name}: ${(err as Error).message}`, {
      next: "cotal status   # is the broker running?",
      cause: err,
    });
  }
}

/**
 * A short-lived user of `account` for cotal's own work (provisioning, inventory): minted in memory,
 * never written to disk, expiring on its own if a crash leaks it.
 */
export async function connectAsAccount(url: string | readonly string[], account: AccountRecord, opts: ConnectOptions & { ttlSeconds?: number; permissions?: Pick<UserCredsOptions, "allowPub" | "allowSub">; issuedAt?: number }): Promise<NatsConnection> {
  const user = mintUserCreds(account, { name: opts.name, expiresInSeconds: opts.ttlSeconds ?? 600, ...opts.permissions, ...(opts.issuedAt !== undefined ? { issuedAt: opts.issuedAt } : {}) });
  return connectWithCreds(url, user.creds, opts);
}
