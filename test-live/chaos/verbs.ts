import { copyFileSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Driver } from "./driver.js";
import type { Rng } from "./rng.js";
import { connectError, manifestProblem, publishEvents, streamCounts } from "./tenant.js";

export const hex = (name: string): string => Buffer.from(name, "utf8").toString("hex");

/** What a run knows about its root, filled by setup and read by the checks. */
export interface RunCtx {
  root: string;
  /** A scratch directory next to the root (tenant files, backup artifacts). */
  scratch: string;
  port: number;
  url: string;
  rng: Rng;
  /** Free-form facts for the report (direction, mode, batch form…). */
  facts: Record<string, string | number | boolean>;
  /** Creds minted during setup, by space (polled ones must exist before the verb). */
  creds: Record<string, string>;
}

/** A read of `cotal status --json`, as far as the checks need it. */
export interface Status {
  state: string;
  why?: string;
  broker: { running: boolean; pid?: number; url?: string };
  spaces: { name: string; inConfig: boolean; inInventory?: boolean }[];
  inventory?: { generation: number; appliedGeneration: number; spaces: string[]; excluded?: string[]; pending: unknown } | null;
  inventoryError?: string;
  diskOnly: string[];
  kvOnly: string[];
  configOnly: string[];
  corrupt: unknown[];
  journal: unknown;
  lock: unknown;
  /** Spaces a killed verb left trusted but perhaps unprovisioned (status prints `next: cotal up --detach`). */
  provisioningOwed?: string[];
}

/** Each listed space's `$SYS` observer creds (README: minted by every add) connect to the running broker. */
export async function observerProblem(ctx: RunCtx, spaces: string[]): Promise<string | undefined> {
  for (const name of spaces) {
    const path = join(ctx.root, `space.${hex(name)}`, "sys.observer.creds");
    let creds: string;
    try {
      creds = readFileSync(path, "utf8");
    } catch {
      return `${name} has no sys.observer.creds`;
    }
    const err = await connectError(ctx.url, creds);
    if (err) return `${name}'s $SYS observer creds do not connect: ${err}`;
  }
  return undefined;
}

export interface Scenario {
  verb: string;
  /** Builds the root up to the moment the verb starts (nothing killed here). */
  setup(d: Driver, ctx: RunCtx): Promise<void>;
  argv(ctx: RunCtx): string[];
  /** The creds (a key of `ctx.creds`: a space, or a revoked user) polled from the verb's start; it must stop connecting for good. */
  removed?: string;
  /**
   * The removal of `removed`'s access is committed in this converged status (default: the KV list no
   * longer names the space). Until then, only the cred's own exit 0 or first refusal starts the window.
   */
  cutCommitted?(ctx: RunCtx, st: Status): boolean;
  /**
   * The server's first refusal of the cred does not start the window: the verb changes the account
   * twice and nats-server may refuse a new connection once while it applies the first change
   * (FINDINGS.md, "A refusal while an account JWT is applied").
   */
  refusalNotFinal?: boolean;
  /** A space whose cred is polled throughout and must never connect (never admitted). */
  neverAdmitted?(ctx: RunCtx): string | undefined;
  /** Spaces whose creds must connect once converged (besides every space the KV lists). */
  mustServe(ctx: RunCtx, st: Status): string[];
  /** Why the verb's intended end state does not hold (undefined: it holds). */
  endState(d: Driver, ctx: RunCtx, st: Status): Promise<string | undefined>;
  /** A state that must never be seen, whatever the cut (undefined: none seen). */
  invariant?(d: Driver, ctx: RunCtx, st: Status): Promise<string | undefined>;
  /** The operator's re-run of the verb when its end state does not hold after recovery. */
  intent(ctx: RunCtx, st: Status): string[][];
  /** The operator's choice where a printed next offers two directions. */
  prefer?(ctx: RunCtx, argv: string[]): string[];
}

const up = (ctx: RunCtx, space = "alpha"): string[] => ["up", "--detach", "--space", space, "--port", String(ctx.port)];

export async function credsOf(d: Driver, space: string, phase: "setup" | "check" = "check", user = "chaos"): Promise<string> {
  const r = await d.ok(phase, ["space", "creds", space, "--user", user, "--json"]);
  return readFileSync((JSON.parse(r.stdout) as { path: string }).path, "utf8");
}

const BATCH = ["b1", "b2", "b3", "b4", "b5", "b6", "b7", "b8"];
const ALPHA_EVENTS = 200;
const BETA_EVENTS = 3_000;
const EVENT_BYTES = 1_024;

const inKv = (st: Status, name: string): boolean => st.inventory?.spaces.includes(name) ?? false;

/** The tenant data a preserve-state cut, a backup or a restore must never lose (alpha is never touched). */
async function alphaIntact(d: Driver, ctx: RunCtx): Promise<string | undefined> {
  const counts = await streamCounts(ctx.url, await credsOf(d, "alpha"));
  const n = counts.cotal_events_alpha;
  return n === ALPHA_EVENTS ? undefined : `alpha holds ${n} events, it was seeded with ${ALPHA_EVENTS}`;
}

const batchAdd: Scenario = {
  verb: "add",
  async setup(d, ctx) {
    await d.ok("setup", up(ctx));
    ctx.facts.form = ctx.rng.next() < 0.5 ? "args" : "--from";
    if (ctx.facts.form === "--from") writeFileSync(join(ctx.scratch, "tenants.txt"), `# chaos batch\n${BATCH.join("\n")}\n`);
  },
  argv: (ctx) => (ctx.facts.form === "--from" ? ["space", "add", "--from", join(ctx.scratch, "tenants.txt")] : ["space", "add", ...BATCH]),
  mustServe: () => ["alpha"],
  async endState(_d, _ctx, st) {
    const missing = BATCH.filter((n) => !inKv(st, n));
    return missing.length ? `not added: ${missing.join(", ")}` : undefined;
  },
  intent: (ctx) => [batchAdd.argv(ctx)],
};

const rm: Scenario = {
  verb: "rm",
  removed: "v",
  async setup(d, ctx) {
    await d.ok("setup", up(ctx));
    await d.ok("setup", ["space", "add", "v", "w"]);
    ctx.creds.v = await credsOf(d, "v", "setup");
  },
  argv: () => ["space", "rm", "v", "--yes"],
  mustServe: () => ["alpha", "w"],
  async endState(_d, _ctx, st) {
    if (inKv(st, "v")) return "v is still listed";
    if (st.spaces.some((s) => s.name === "v")) return "v's record is still on disk";
    return undefined;
  },
  intent: () => [["space", "rm", "v", "--yes"]],
};

/**
 * A root divergent on purpose: ghost is added, its record copied aside, removed, and the record put
 * back. The record composes (same operator) but the KV list never had it: disk-only.
 */
const reconcile: Scenario = {
  verb: "reconcile",
  async setup(d, ctx) {
    await d.ok("setup", up(ctx));
    await d.ok("setup", ["space", "add", "ghost", "w"]);
    const rec = join(ctx.root, "auth", `account.${hex("ghost")}.json`);
    const aside = join(ctx.scratch, "ghost.record.json");
    copyFileSync(rec, aside);
    ctx.creds.ghost = await credsOf(d, "ghost", "setup");
    await d.ok("setup", ["space", "rm", "ghost", "--yes"]);
    copyFileSync(aside, rec);
    ctx.facts.direction = ctx.rng.next() < 0.5 ? "disk" : "kv";
    ctx.facts.mode = ctx.rng.next() < 0.5 ? "live" : "offline";
    if (ctx.facts.mode === "offline") await d.ok("setup", ["down"]);
  },
  argv: (ctx) => ["broker", "reconcile", `--adopt-${String(ctx.facts.direction)}`, "--yes"],
  neverAdmitted: (ctx) => (ctx.facts.direction === "kv" ? "ghost" : undefined),
  mustServe: (ctx) => (ctx.facts.direction === "disk" ? ["alpha", "w", "ghost"] : ["alpha", "w"]),
  async endState(_d, ctx, st) {
    if (ctx.facts.direction === "disk") return inKv(st, "ghost") ? undefined : "ghost was not admitted";
    if (inKv(st, "ghost")) return "ghost was admitted by --adopt-kv";
    return st.inventory?.excluded?.includes("ghost") ? undefined : "ghost is not recorded as excluded";
  },
  intent: (ctx) => [reconcile.argv(ctx)],
  prefer: (ctx, argv) => argv.map((a) => (a === "--adopt-disk" || a === "--adopt-kv" ? `--adopt-${String(ctx.facts.direction)}` : a)),
};

function systemKey(root: string): string {
  return (JSON.parse(readFileSync(join(root, "auth", "broker.json"), "utf8")) as { system: { publicKey: string } }).system.publicKey;
}

const rotateSys: Scenario = {
  verb: "rotate-sys",
  async setup(d, ctx) {
    await d.ok("setup", up(ctx));
    await d.ok("setup", ["space", "add", "b"]);
    ctx.facts.systemBefore = systemKey(ctx.root);
    await d.ok("setup", ["down"]);
  },
  argv: () => ["up", "--rotate-sys", "--detach"],
  mustServe: () => ["alpha", "b"],
  async endState(_d, ctx) {
    return systemKey(ctx.root) === ctx.facts.systemBefore ? "the system account was not rotated" : undefined;
  },
  // observer creds must follow the running system account whether or not the rotation landed (issue 12 item 7)
  invariant: async (_d, ctx, st) => observerProblem(ctx, st.spaces.map((s) => s.name)),
  intent: () => [["down"], ["up", "--rotate-sys", "--detach"]],
};

async function seedAlpha(d: Driver, ctx: RunCtx): Promise<void> {
  await d.ok("setup", up(ctx));
  await publishEvents(ctx.url, await credsOf(d, "alpha", "setup"), "alpha", ALPHA_EVENTS, 256);
}

const cut: Scenario = {
  verb: "cut",
  async setup(d, ctx) {
    await seedAlpha(d, ctx);
    await d.ok("setup", ["space", "add", "b"]);
  },
  argv: () => ["down", "--preserve-state"],
  mustServe: () => ["alpha", "b"],
  endState: async () => undefined, // a cut then `up` changes nothing; the invariant is the data
  invariant: (d, ctx) => alphaIntact(d, ctx),
  intent: () => [],
};

async function withBeta(d: Driver, ctx: RunCtx): Promise<void> {
  await seedAlpha(d, ctx);
  await d.ok("setup", ["space", "add", "beta"]);
  await publishEvents(ctx.url, await credsOf(d, "beta", "setup"), "beta", BETA_EVENTS, EVENT_BYTES);
}

/** What is wrong with beta's backup at `<scratch>/beta.bak` ("no manifest" when none was published). */
function betaBackupProblem(ctx: RunCtx): string | undefined {
  return manifestProblem(join(ctx.scratch, "beta.bak"), "beta", BETA_EVENTS);
}

/** A published manifest that does not describe a complete artifact; none published is not this. */
function incompleteBetaBackup(ctx: RunCtx): string | undefined {
  const p = betaBackupProblem(ctx);
  return p && p !== "no manifest" ? `published an incomplete backup: ${p}` : undefined;
}

const backup: Scenario = {
  verb: "backup",
  async setup(d, ctx) {
    await withBeta(d, ctx);
    await d.ok("setup", ["down", "--preserve-state"]);
  },
  argv: (ctx) => ["space", "backup", "beta", "--out", join(ctx.scratch, "beta.bak")],
  mustServe: () => ["alpha", "beta"],
  endState: async (_d, ctx) => betaBackupProblem(ctx),
  // a manifest, if one was published at all, describes a complete artifact (issue 12 item 10)
  async invariant(d, ctx) {
    return incompleteBetaBackup(ctx) ?? alphaIntact(d, ctx);
  },
  intent: (ctx) => [["down", "--preserve-state"], backup.argv(ctx)],
};

/** beta's account JWT still revokes every user (`revocations["*"]`): quiesced. */
function betaQuiesced(root: string): boolean {
  const rec = JSON.parse(readFileSync(join(root, "auth", `account.${hex("beta")}.json`), "utf8")) as { jwt: string };
  const claims = JSON.parse(Buffer.from(rec.jwt.split(".")[1] ?? "", "base64url").toString("utf8")) as { nats?: { revocations?: Record<string, number> } };
  return claims.nats?.revocations?.["*"] !== undefined;
}

/** The live backup (broker running, beta untouched): whatever the cut, a published manifest is complete, beta's cred connects. */
const backupOnline: Scenario = {
  verb: "backup-online",
  async setup(d, ctx) {
    await withBeta(d, ctx);
    ctx.creds.beta = await credsOf(d, "beta", "setup"); // issued before any quiesce: it must connect again after the lift
  },
  argv: (ctx) => ["space", "backup", "beta", "--out", join(ctx.scratch, "beta.bak")],
  mustServe: () => ["alpha", "beta"],
  endState: async (_d, ctx) => betaBackupProblem(ctx),
  async invariant(d, ctx) {
    const incomplete = incompleteBetaBackup(ctx);
    if (incomplete) return incomplete;
    if (betaQuiesced(ctx.root)) return "beta's account JWT still revokes every user (not lifted)";
    const err = await connectError(ctx.url, ctx.creds.beta ?? "");
    if (err) return `beta's pre-backup cred does not connect after convergence: ${err}`;
    return alphaIntact(d, ctx);
  },
  intent: (ctx) => [backupOnline.argv(ctx)],
};

/** The --quiesce backup (only beta quiesced): whatever the cut, beta ends lifted, its pre-backup cred connects. */
const backupQuiesce: Scenario = {
  ...backupOnline,
  verb: "backup-quiesce",
  argv: (ctx) => ["space", "backup", "beta", "--quiesce", "--out", join(ctx.scratch, "beta.bak")],
  intent: (ctx) => [backupQuiesce.argv(ctx)],
};

const restore: Scenario = {
  verb: "restore",
  async setup(d, ctx) {
    await withBeta(d, ctx);
    await d.ok("setup", ["down", "--preserve-state"]);
    await d.ok("setup", ["space", "backup", "beta", "--out", join(ctx.scratch, "beta.bak")]);
    await d.ok("setup", ["up", "--detach"]);
    await d.ok("setup", ["space", "rm", "beta", "--yes"]);
    await d.ok("setup", ["space", "add", "beta"]);
    await d.ok("setup", ["down", "--preserve-state"]);
  },
  argv: (ctx) => ["space", "restore", "beta", "--from", join(ctx.scratch, "beta.bak"), "--rebind-account"],
  mustServe: () => ["alpha", "beta"],
  async endState(d, ctx) {
    const n = (await streamCounts(ctx.url, await credsOf(d, "beta"))).cotal_events_beta;
    return n === BETA_EVENTS ? undefined : `beta holds ${n} events, not the ${BETA_EVENTS} restored`;
  },
  // the tenant sees all of the artifact or none of it, never a part (a restore never merges)
  async invariant(d, ctx) {
    const n = (await streamCounts(ctx.url, await credsOf(d, "beta"))).cotal_events_beta;
    if (n !== 0 && n !== BETA_EVENTS) return `beta holds ${n} events: a partial restore is visible`;
    return alphaIntact(d, ctx);
  },
  intent: (ctx) => [["down", "--preserve-state"], restore.argv(ctx)],
};

/** beta lifted and its cred minted before the verb (issued before any quiesce) connecting again: the online restore's exit, whatever the cut. */
async function betaLifted(ctx: RunCtx): Promise<string | undefined> {
  if (betaQuiesced(ctx.root)) return "beta's account JWT still revokes every user (not lifted)";
  const err = await connectError(ctx.url, ctx.creds.beta ?? "");
  return err ? `beta's pre-restore cred does not connect after convergence: ${err}` : undefined;
}

const betaEvents = async (d: Driver, ctx: RunCtx): Promise<number | undefined> => (await streamCounts(ctx.url, await credsOf(d, "beta"))).cotal_events_beta;

/** The online restore (broker running, only beta quiesced) into beta's re-added, empty namespace. */
const restoreOnline: Scenario = {
  verb: "restore-online",
  async setup(d, ctx) {
    await withBeta(d, ctx);
    await d.ok("setup", ["space", "backup", "beta", "--out", join(ctx.scratch, "beta.bak")]);
    await d.ok("setup", ["space", "rm", "beta", "--yes"]);
    await d.ok("setup", ["space", "add", "beta"]);
    ctx.creds.beta = await credsOf(d, "beta", "setup");
  },
  argv: (ctx) => ["space", "restore", "beta", "--from", join(ctx.scratch, "beta.bak"), "--rebind-account"],
  mustServe: () => ["alpha", "beta"],
  async endState(d, ctx) {
    const n = await betaEvents(d, ctx);
    return n === BETA_EVENTS ? undefined : `beta holds ${n} events, not the ${BETA_EVENTS} restored`;
  },
  // all of the artifact or none of it (a partial stream is deleted before the lift), and beta lifted
  async invariant(d, ctx) {
    const n = await betaEvents(d, ctx);
    if (n !== 0 && n !== BETA_EVENTS) return `beta holds ${n} events: a partial restore is visible`;
    return (await betaLifted(ctx)) ?? alphaIntact(d, ctx);
  },
  intent: (ctx) => [restoreOnline.argv(ctx)],
};

/** The public key of a creds file's user JWT (its `sub`). */
function userKeyOf(creds: string): string {
  const jwt = /-----BEGIN NATS USER JWT-----\s*(\S+)/.exec(creds)?.[1] ?? "";
  return (JSON.parse(Buffer.from(jwt.split(".")[1] ?? "", "base64url").toString("utf8")) as { sub: string }).sub;
}

/** alpha's account record on disk (what the next render takes): its signing key and its JWT's claims. */
function alphaAccount(root: string): { signingKey: string; nats: { revocations?: Record<string, number>; signing_keys?: (string | { key: string })[] } } {
  const rec = JSON.parse(readFileSync(join(root, "auth", `account.${hex("alpha")}.json`), "utf8")) as { jwt: string; signingKey: string };
  const claims = JSON.parse(Buffer.from(rec.jwt.split(".")[1] ?? "", "base64url").toString("utf8")) as { nats?: { revocations?: Record<string, number>; signing_keys?: (string | { key: string })[] } };
  return { signingKey: rec.signingKey, nats: claims.nats ?? {} };
}

const alphaRevocations = (root: string): Record<string, number> => alphaAccount(root).nats.revocations ?? {};

const converged = (st: Status): boolean => !!st.inventory && st.inventory.generation === st.inventory.appliedGeneration && !st.inventory.pending;

/**
 * `space revoke` (issue 33): alice of alpha is revoked; whatever the cut, once her cred was refused
 * (or the verb exited 0) it never connects again, and bob of the same space and space w keep working.
 */
const revoke: Scenario = {
  verb: "revoke",
  removed: "alice",
  async setup(d, ctx) {
    await seedAlpha(d, ctx);
    await d.ok("setup", ["space", "add", "w"]);
    ctx.creds.alice = await credsOf(d, "alpha", "setup", "alice");
    ctx.creds.bob = await credsOf(d, "alpha", "setup", "bob");
  },
  argv: () => ["space", "revoke", "alpha", "--user", "alice"],
  cutCommitted: (ctx, st) => converged(st) && alphaRevocations(ctx.root)[userKeyOf(ctx.creds.alice ?? "")] !== undefined,
  mustServe: () => ["alpha", "w"],
  async endState(_d, ctx) {
    const err = await connectError(ctx.url, ctx.creds.alice ?? "");
    return err && /authorization violation/i.test(err) ? undefined : `alice's cred is not refused: ${err ?? "it connects"}`;
  },
  async invariant(d, ctx) {
    const err = await connectError(ctx.url, ctx.creds.bob ?? "");
    return err ? `bob (alpha's other user) does not connect: ${err}` : alphaIntact(d, ctx);
  },
  intent: () => [["space", "revoke", "alpha", "--user", "alice"]],
};

/** alpha's JWT still lists `key` among its signing keys. */
const alphaSigns = (root: string, key: string): boolean => (alphaAccount(root).nats.signing_keys ?? []).some((k) => (typeof k === "string" ? k : k.key) === key);

/**
 * `space rotate-key` (issue 33): alpha's signing key is replaced. Whatever the cut, a cred of the old
 * key, polled from the verb's start, never connects again once refused (or once the verb exited 0);
 * at the end the old key is gone from the JWT, cotal's own cred of alice (re-signed under the root)
 * connects, and space w is untouched.
 */
const rotateKey: Scenario = {
  verb: "rotate-key",
  removed: "alice",
  refusalNotFinal: true,
  async setup(d, ctx) {
    await seedAlpha(d, ctx);
    await d.ok("setup", ["space", "add", "w"]);
    ctx.creds.alice = await credsOf(d, "alpha", "setup", "alice"); // the text as minted: signed by the old key
    ctx.facts.oldKey = alphaAccount(ctx.root).signingKey;
  },
  argv: () => ["space", "rotate-key", "alpha"],
  cutCommitted: (ctx, st) => converged(st) && !alphaSigns(ctx.root, String(ctx.facts.oldKey)),
  mustServe: () => ["alpha", "w"],
  async endState(_d, ctx) {
    if (alphaSigns(ctx.root, String(ctx.facts.oldKey))) return "alpha's JWT still lists the old signing key";
    const err = await connectError(ctx.url, ctx.creds.alice ?? "");
    if (!err || !/authorization violation/i.test(err)) return `the old key's cred is not refused: ${err ?? "it connects"}`;
    const moved = readFileSync(join(ctx.root, `space.${hex("alpha")}`, "users", "alice.creds"), "utf8");
    const again = await connectError(ctx.url, moved);
    return again ? `cotal's own cred of alice, re-signed under the root, does not connect: ${again}` : undefined;
  },
  invariant: (d, ctx) => alphaIntact(d, ctx),
  intent: () => [["space", "rotate-key", "alpha"]],
};

const BETA_LATER = 500;

/** The online `--replace --yes` over beta's own streams (the same account: no flag), beta holding more than the artifact. */
const restoreReplace: Scenario = {
  verb: "restore-replace",
  async setup(d, ctx) {
    await withBeta(d, ctx);
    await d.ok("setup", ["space", "backup", "beta", "--out", join(ctx.scratch, "beta.bak")]);
    ctx.creds.beta = await credsOf(d, "beta", "setup");
    await publishEvents(ctx.url, ctx.creds.beta, "beta", BETA_LATER, EVENT_BYTES); // written after the backup: the replace drops them
  },
  argv: (ctx) => ["space", "restore", "beta", "--from", join(ctx.scratch, "beta.bak"), "--replace", "--yes"],
  mustServe: () => ["alpha", "beta"],
  async endState(d, ctx) {
    const n = await betaEvents(d, ctx);
    return n === BETA_EVENTS ? undefined : `beta holds ${n} events, not the ${BETA_EVENTS} of the backup`;
  },
  // once converged (no entry standing): the old data or the backup's, never a mix or an empty namespace
  async invariant(d, ctx) {
    const n = await betaEvents(d, ctx);
    if (n !== BETA_EVENTS && n !== BETA_EVENTS + BETA_LATER) return `beta holds ${n} events: neither its own ${BETA_EVENTS + BETA_LATER} nor the backup's ${BETA_EVENTS}`;
    return (await betaLifted(ctx)) ?? alphaIntact(d, ctx);
  },
  intent: (ctx) => [restoreReplace.argv(ctx)],
};

export const SCENARIOS: readonly Scenario[] = [batchAdd, rm, reconcile, rotateSys, cut, backup, backupOnline, backupQuiesce, restore, restoreOnline, restoreReplace, revoke, rotateKey];
