import { jetstreamManager } from "@nats-io/jetstream";
import { connectAsAccount } from "../broker/connect.js";
import { SagaError } from "../errors.js";
import type { AccountRecord } from "../root/records.js";

/**
 * The commit point of `space rm` (000 §2.2 step 5): deletes every stream (and so every KV bucket) in
 * the space's account, under a short-lived lifecycle user. Idempotent: a re-run finds nothing to delete.
 */
export async function deleteSpaceStreams(url: string, account: AccountRecord): Promise<string[]> {
  const nc = await connectAsAccount(url, account, { name: `cotal-teardown-${account.name}`, ttlSeconds: 300 });
  try {
    const jsm = await jetstreamManager(nc);
    const names: string[] = [];
    for await (const n of jsm.streams.names()) names.push(n);
    for (const n of names) await jsm.streams.delete(n);
    return names.sort();
  } catch (err) {
    throw new SagaError("broker-unreachable", `deleting the streams of space ${account.name} failed: ${(err as Error).message}`, {
      exit: `cotal space rm ${account.name}   # re-running it continues the removal`,
      cause: err,
    });
  } finally {
    await nc.close();
  }
}
