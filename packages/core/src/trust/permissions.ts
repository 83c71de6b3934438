/**
 * The one home for what each kind of cotal-minted user may do (docs/lifecycle.md "Minted users"). Pure: each function returns
 * the publish/subscribe lists a user JWT carries; `mintUserCreds` signs them.
 */
import { GUARDS_ON, type Guards } from "../guards.js";
import { decodeJwt } from "./jwt.js";
import { parseCreds } from "./creds-file.js";

/** A user's subject permissions, in the shape of a user JWT's `pub` / `sub` claims. */
export interface SubjectPermissions {
  allowPub?: string[];
  denyPub?: string[];
  allowSub?: string[];
  denySub?: string[];
}

/**
 * A cred's own reply prefix: `_INBOX_<its user public key>`. A client using such a cred connects with
 * nats.js `inboxPrefix` set to it; the cred may subscribe under it and nowhere else in `_INBOX`.
 */
export function ownInboxPrefix(userPublicKey: string): string {
  return `_INBOX_${userPublicKey}`;
}

/** The inbox prefix a creds file's user must use (nats.js `inboxPrefix`), or undefined for one without. */
export function inboxPrefixOf(creds: string): string | undefined {
  const claims = decodeJwt(parseCreds(creds).jwt);
  const own = `${ownInboxPrefix(claims.sub)}.>`;
  const sub = claims.nats.sub as { allow?: unknown } | undefined;
  return Array.isArray(sub?.allow) && sub.allow.includes(own) ? ownInboxPrefix(claims.sub) : undefined;
}

/**
 * The JetStream API a default space user may not call: everything that creates, deletes, reconfigures,
 * purges, erases, snapshots or restores a stream (KV buckets are streams), and the cluster/account
 * admin API. Reading (INFO, NAMES, LIST, MSG.GET, DIRECT.GET) and consumer management stay open, so
 * the user can publish, consume, get/put/watch KV and create the consumers reading needs. `.>` rather
 * than `.*` so a longer subject form of the same request is denied too.
 */
export const STREAM_ADMIN_SUBJECTS: readonly string[] = [
  "$JS.API.STREAM.CREATE.>",
  "$JS.API.STREAM.UPDATE.>",
  "$JS.API.STREAM.DELETE.>",
  "$JS.API.STREAM.PURGE.>",
  "$JS.API.STREAM.MSG.DELETE.>",
  "$JS.API.STREAM.SNAPSHOT.>",
  "$JS.API.STREAM.RESTORE.>",
  "$JS.API.STREAM.PEER.>",
  "$JS.API.STREAM.LEADER.>",
  "$JS.API.STREAM.CANCEL_MOVE.>",
  "$JS.API.CONSUMER.LEADER.>",
  "$JS.API.ACCOUNT.>",
  "$JS.API.META.>",
  "$JS.API.SERVER.>",
];

export type SpaceUserRole = "user" | "admin";

/**
 * A space user: `admin` has its account's full JetStream API; `user` (the default) everything but
 * STREAM_ADMIN_SUBJECTS. Core subjects are not narrowed here: the account is the tenant wall.
 */
export function spaceUserPermissions(role: SpaceUserRole, guards: Guards = GUARDS_ON): SubjectPermissions {
  if (role === "admin" || guards.UNRESTRICTED_USER) return {};
  return { denyPub: [...STREAM_ADMIN_SUBJECTS] };
}

/** The teardown user of `space rm` (docs/lifecycle.md, `space rm` step 3): lists the account's streams and deletes them, nothing else. */
export function teardownPermissions(): SubjectPermissions {
  return {
    allowPub: ["$JS.API.INFO", "$JS.API.STREAM.NAMES", "$JS.API.STREAM.LIST", "$JS.API.STREAM.INFO.*", "$JS.API.STREAM.DELETE.*"],
    allowSub: ["_INBOX.>"],
  };
}

/** The account-scoped `$SYS` requests an observer may make (all answered about that account only). */
const OBSERVER_REQUESTS = ["CONNZ", "SUBSZ", "CONNS", "INFO", "JSZ", "STATZ", "LEAFZ"] as const;

/**
 * A space's `$SYS` membership observer: its own account's events and requests, and replies only on
 * its own inbox prefix (the caller adds it: it names the user key). `_INBOX.>` in the system account
 * would let it read every other tenant's `$SYS` replies.
 */
export function observerPermissions(accountPublicKey: string, guards: Guards = GUARDS_ON): SubjectPermissions & { ownInbox: boolean } {
  const wideInbox = guards.WIDE_OBSERVER_INBOX;
  const wideRequests = guards.WIDE_OBSERVER_REQUESTS;
  return {
    allowSub: [`$SYS.ACCOUNT.${accountPublicKey}.>`, ...(wideInbox ? ["_INBOX.>"] : [])],
    allowPub: wideRequests ? ["$SYS.REQ.ACCOUNT.*.>"] : OBSERVER_REQUESTS.map((r) => `$SYS.REQ.ACCOUNT.${accountPublicKey}.${r}`),
    ownInbox: !wideInbox,
  };
}

/**
 * The broker's connection evictor (docs/lifecycle.md): lists a server's connections and kicks them by id. The
 * server-wide CONNZ is needed because an account the broker just dropped no longer answers its own.
 */
export function evictorPermissions(): SubjectPermissions & { ownInbox: boolean } {
  return { allowPub: ["$SYS.REQ.SERVER.*.CONNZ", "$SYS.REQ.SERVER.*.KICK"], allowSub: [], ownInbox: true };
}
