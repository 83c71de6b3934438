import type { JszAccount, SystemClient } from "../broker/system-client.js";
import type { AccountRecord } from "../root/records.js";
import { spaceTemplate, type SpaceTemplate } from "./template.js";

/** Accounts per JSZ page: 3 streams each with their configs stay well under 1 MB a reply. */
export const JSZ_PAGE = 256;

/** What one JSZ reply says of an account's streams: name → config (the server's JSON). */
export type AccountStreams = Map<string, Record<string, unknown> | undefined>;

/**
 * Pure: whether the space's template stands as provisionSpace leaves it. Each template stream exists
 * with the fields provisionSpace sets (an add with another config is an update of those fields);
 * each bucket exists (provisionSpace's KV create leaves an existing bucket as it is).
 */
export function templateInPlace(tpl: SpaceTemplate, streams: AccountStreams | undefined): boolean {
  if (!streams) return false;
  for (const s of tpl.streams) {
    const c = streams.get(s.name);
    if (!c) return false;
    const subjects = Array.isArray(c.subjects) ? c.subjects : [];
    if (subjects.length !== s.subjects.length || s.subjects.some((x, i) => subjects[i] !== x)) return false;
    if (c.storage !== "file" || c.retention !== "limits" || (c.description ?? "") !== s.description || (c.num_replicas ?? 1) !== s.replicas) return false;
  }
  return tpl.buckets.every((b) => streams.has(`KV_${b.bucket}`));
}

function streamsOf(a: JszAccount): AccountStreams {
  return new Map((a.stream_detail ?? []).map((d) => [d.name, d.config]));
}

/**
 * Every account's streams in as few JSZ requests as the server pages: pages from offset 1 (sorted on
 * every version), then the wanted accounts no page showed asked for by name (the first account, and
 * any whose JetStream the server has not enabled: those read as absent).
 */
export async function readAccountStreams(client: SystemClient, wanted: readonly string[], timeoutMs = 10_000): Promise<Map<string, AccountStreams>> {
  const details = await readAccountDetails(client, wanted, { timeoutMs });
  return new Map([...details].map(([id, a]) => [id, streamsOf(a)]));
}

/** {@link readAccountStreams}'s pages, each account's detail as the server sent it (`raft`: with each stream's group). */
export async function readAccountDetails(client: SystemClient, wanted: readonly string[], opts: { timeoutMs?: number; raft?: boolean } = {}): Promise<Map<string, JszAccount>> {
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const raft = opts.raft === true;
  const seen = new Map<string, JszAccount>();
  for (let offset = 1; ; offset += JSZ_PAGE) {
    const page = await client.accountStreams({ offset, limit: JSZ_PAGE, raft }, timeoutMs);
    for (const a of page) seen.set(a.id, a);
    if (page.length < JSZ_PAGE) break;
  }
  for (const id of wanted) {
    if (seen.has(id)) continue;
    // 2.9 answers an unknown account with a page of others: only a detail of this id counts.
    const one = (await client.accountStreams({ offset: 0, limit: 1, account: id, raft }, timeoutMs)).find((a) => a.id === id);
    if (one) seen.set(id, one);
  }
  return seen;
}

/** Pure: the records whose template is not in place on the server, in their order. */
export function spacesOwingTemplate(records: readonly AccountRecord[], streams: ReadonlyMap<string, AccountStreams>, replicas = 1): AccountRecord[] {
  return records.filter((r) => !templateInPlace(spaceTemplate(r.name, replicas), streams.get(r.publicKey)));
}
