import { jetstreamManager } from "@nats-io/jetstream";
import { connectWithCreds } from "../broker/connect.js";
import { CotalError } from "../errors.js";
import type { AccountRecord } from "../root/records.js";
import { mintUserCreds, teardownPermissions } from "../trust/index.js";

/**
 * The lifecycle-scoped teardown user of a removal (docs/lifecycle.md, `space rm` step 3): minted in memory, expiring on
 * its own, allowed to list and delete streams and nothing else. Default space users are denied
 * STREAM.DELETE (docs/lifecycle.md "Minted users"), so within a removal this is the only holder of it.
 */
export function mintTeardownCreds(account: AccountRecord): string {
  return mintUserCreds(account, { name: `cotal-teardown-${account.name}`, expiresInSeconds: 300, ...teardownPermissions() }).creds;
}

/**
 * The commit point of `space rm`: deletes every stream (and so every KV bucket) in the space's
 * account under the teardown user. Idempotent: a re-run finds nothing to delete.
 */
export async function deleteSpaceStreams(url: string, account: AccountRecord): Promise<string[]> {
  const nc = await connectWithCreds(url, mintTeardownCreds(account), { name: `cotal-teardown-${account.name}` });
  try {
    const jsm = await jetstreamManager(nc);
    const names: string[] = [];
    for await (const n of jsm.streams.names()) names.push(n);
    for (const n of names) await jsm.streams.delete(n);
    return names.sort();
  } catch (err) {
    throw new CotalError("broker-unreachable", `deleting the streams of space ${account.name} failed: ${(err as Error).message}`, {
      next: `cotal space rm ${account.name} --yes   # re-running it continues the removal`,
      cause: err,
    });
  } finally {
    await nc.close();
  }
}
