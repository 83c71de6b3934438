import { createUser, type KeyPair } from "@nats-io/nkeys";
import { connect, type NatsConnection } from "@nats-io/transport-node";

export const PLAIN_CONFIG = `listen: 127.0.0.1:{{PORT}}
jetstream { store_dir: "{{STORE_DIR}}" }
`;

export async function withConnection<T>(url: string, fn: (nc: NatsConnection) => Promise<T>): Promise<T> {
  const nc = await connect({ servers: url, reconnect: false, timeout: 2_000 });
  try {
    return await fn(nc);
  } finally {
    await nc.close();
  }
}

/** JetStream API over plain requests, so the harness needs no JetStream client dependency. */
export async function jsApi<T = Record<string, unknown>>(nc: NatsConnection, subject: string, body?: unknown): Promise<T> {
  const msg = await nc.request(`$JS.API.${subject}`, body === undefined ? "" : JSON.stringify(body), { timeout: 5_000 });
  const reply = msg.json<T & { error?: { description?: string } }>();
  if (reply.error) throw new Error(`JetStream ${subject}: ${reply.error.description ?? JSON.stringify(reply.error)}`);
  return reply;
}

/**
 * A syntactically valid creds file with a fresh user seed. The JWT is not checked client-side;
 * a server without auth ignores it and one with other auth rejects it, which is all these tests need.
 */
export function dummyCreds(kp: KeyPair = createUser()): string {
  const seed = new TextDecoder().decode(kp.getSeed());
  return `-----BEGIN NATS USER JWT-----
eyJ0eXAiOiJKV1QiLCJhbGciOiJlZDI1NTE5LW5rZXkifQ.eyJzdWIiOiJVQUJDIn0.c2ln
------END NATS USER JWT------

-----BEGIN USER NKEY SEED-----
${seed}
------END USER NKEY SEED------
`;
}
