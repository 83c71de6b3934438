import { type Guards } from "../guards.js";
import type { ChildProcess } from "node:child_process";
import { liftStandingQuiesces, type LiftReport } from "../backup/quiesce.js";
import { existsSync } from "node:fs";
import { randomBytes } from "node:crypto";
import { RERUN, CotalError } from "../errors.js";
import { shellWord } from "../error-shape.js";
import { failpoint } from "../failpoints.js";
import { adoptableBroker, adoptBroker } from "../broker/adopt.js";
import { brokerState, type BrokerRuntime } from "../broker/runtime.js";
import { renderRoot } from "../broker/render-root.js";
import { startBroker } from "../broker/process.js";
import { type ProvisionResult } from "../provision/provision-space.js";
import { provisionSpaces, reprovisionSpaces } from "../provision/provision-batch.js";
import type { MaintenanceLock } from "../lock/maintenance-lock.js";
import { accountInventory, loadSpaceAccount } from "../root/account-store.js";
import { digestOfServerConf } from "../saga/digest.js";
import { finishColdBoot, planColdBoot } from "./boot.js";
import { ensureLiveInventory } from "./live-inventory.js";
import { createRootTrust } from "../root/create-root.js";
import type { RootLayout } from "../root/layout.js";
import { writeUnservedConfig } from "../saga/apply.js";
import { DEFAULT_HOST, DEFAULT_PORT, loadSettings, saveSettings } from "../root/settings.js";
import { ensureUserCreds } from "./creds.js";
import { configPicture } from "../render/config-picture.js";
import { readProvisioningOwed, settleProvisioning } from "../provision/owed.js";
import { loadBrokerTrust } from "../root/broker-store.js";
import { readTextIfExists } from "../root/secret-files.js";

/** What the boot step needs besides the root; validated by `up` before the lock. */
export interface BootOptions {
  host?: string;
  port?: number;
  /** The space to create on a new root (default "default"), or to print connect details for. */
  space?: string;
  /** Do not retain the system signing seed: later `space add` then needs `up --rotate-sys`. */
  singleSpace?: boolean;
  detach: boolean;
  onProgress?: (message: string) => void;
  /** Counted provisioning progress (the CLI draws it as a bar): called after each space. */
  onProvision?: (p: { done: number; total: number; space: string }) => void;
}

export interface UpResult {
  root: string;
  created: boolean;
  alreadyRunning: boolean;
  url: string;
  pid: number;
  space: string;
  spaces: string[];
  credsFile: string;
  multiSpace: boolean;
  provisioned: ProvisionResult[];
  serverVersion: string;
  /** What up resolved on the way (resumed or rolled-back mutations). */
  notes: string[];
  /** Foreground only: the running nats-server. */
  child?: ChildProcess;
  /** A cluster root only (ops/boot-cluster.ts): every node. */
  nodes?: { name: string; pid: number; url: string; port: number; clusterPort: number }[];
}

/** The root and the maintenance lock the caller's verb preamble (verb/verb.ts) took for it. */
export interface BootContext {
  layout: RootLayout;
  lock: MaintenanceLock;
  /** The verb's guards (docs/ablation.md). */
  guards: Guards;
}

/** What `up` says about quiesces it lifted (backup/quiesce.ts). */
export function liftNotes(r: LiftReport): string[] {
  const rec = r.recovered;
  const out = !rec ? [] : rec.purpose === "backup" ? [`lifted the quiesce of space ${rec.space} left by online backup ${rec.attemptId} (${rec.stage}); its artifact at ${rec.out}: ${rec.artifact}`]
    : [`lifted the quiesce of space ${rec.space} left by online restore ${rec.attemptId} (${rec.stage})${rec.putBack?.length ? `; put the tenant's own streams back from its safety copy: ${rec.putBack.join(", ")}` : ""}${rec.dropped?.length ? `; deleted its partially restored streams ${rec.dropped.join(", ")}` : ""}${rec.unfinished ? `; the restore is unfinished (its --replace deleted the old streams): cotal space restore ${rec.space} --from ${rec.out} --replace --yes` : ""}`];
  return [...out, ...r.lifted.map((s) => `lifted space ${s}: its account JWT revoked every user with no backup journaled`)];
}

/** `--space` on a running root names a space it serves: refused before any write otherwise (issue #28). */
function assertRequestedSpace(layout: RootLayout, requested: string | undefined, names: readonly string[], guards: Guards): void {
  if (requested === undefined || names.includes(requested) || guards.UP_ANY_SPACE) return;
  throw new CotalError("space-not-found", `space ${requested} does not exist on ${layout.root} (it holds: ${names.join(", ") || "no space"})`, {
    next: `cotal --root ${shellWord(layout.root)} space add ${requested} && ${RERUN}`,
    details: { space: requested, spaces: [...names] },
  });
}

/**
 * `up` on a running broker (`--space` already checked by the caller, before any write): the owed
 * resume, lifts and provisioning, then the connect details of a space it serves; the creds path it
 * prints exists (minted when absent), never a guess.
 */
async function upOnRunningBroker({ layout, lock, guards }: BootContext, runtime: BrokerRuntime, opts: BootOptions, adopted: string[]): Promise<UpResult> {
  const progress = opts.onProgress ?? (() => undefined);
  const notes = [...adopted, ...(await ensureLiveInventory(layout, lock, progress, guards))];
  notes.push(...liftNotes(await liftStandingQuiesces(layout, lock, { guards }))); // a stopped online backup resumes to lifted
  const inv = accountInventory(layout);
  assertRequestedSpace(layout, opts.space, inv.spaces.map((s) => s.name), guards); // the resume may have rolled an add back
  const account = opts.space === undefined ? inv.spaces[0] : inv.spaces.find((s) => s.name === opts.space);
  const space = account?.name ?? opts.space ?? "default";
  // A verb killed between its commit and its provisioning left its spaces owed (provision/owed.ts):
  // `up` provisions those it serves, never all N tenants on every call.
  const served = new Set(configPicture(readTextIfExists(layout.serverConf), inv.spaces, []).preloadedNames);
  const marker = readProvisioningOwed(layout);
  const owed = (name: string): boolean => marker !== undefined && (marker.unreadable === true || marker.spaces.includes(name));
  const broker = loadBrokerTrust(layout);
  const due = inv.spaces.filter((s) => served.has(s.name) && owed(s.name));
  const provisioned = await provisionSpaces(layout, broker, runtime, due, { onProvision: opts.onProvision, guards });
  settleProvisioning(layout);
  return {
    root: layout.root,
    created: false,
    alreadyRunning: true,
    url: runtime.url,
    pid: runtime.owner.pid,
    space,
    spaces: inv.spaces.map((s) => s.name),
    credsFile: account ? ensureUserCreds(layout, account, "admin") : layout.userCredsFile(space, "admin"),
    multiSpace: existsSync(layout.systemSigningSeedFile),
    provisioned,
    serverVersion: runtime.serverVersion,
    notes,
  };
}

/**
 * A stopped root's settings before its boot: a new root gets its settings and trust (refused when
 * account records exist without trust), an existing one may move its listener. True when created.
 */
function createOrMoveRoot(layout: RootLayout, opts: BootOptions): boolean {
  const { port, space: requested } = opts;
  const progress = opts.onProgress ?? (() => undefined);
  if (!existsSync(layout.brokerFile)) {
    const inv = accountInventory(layout);
    if (inv.spaces.length > 0 || inv.corrupt.length > 0 || existsSync(layout.authDir)) {
      throw new CotalError("missing-broker-trust", `${layout.root} holds account records but no broker trust (${layout.brokerFile})`, {
        next: `restore ${layout.brokerFile} and ${layout.brokerSecretsDir} from a backup; minting a new operator would orphan every tenant`,
      });
    }
    progress(`creating root ${layout.root}`);
    if (!loadSettings(layout)) {
      saveSettings(layout, {
        format: "cotal.settings/1",
        host: opts.host ?? DEFAULT_HOST,
        port: port ?? DEFAULT_PORT,
        serverName: `cotal-${randomBytes(4).toString("hex")}`,
        createdAt: new Date().toISOString(),
      });
    }
    createRootTrust(layout, requested ?? "default", { multiSpace: !opts.singleSpace });
    return true;
  }
  const settings = loadSettings(layout);
  // The listener is fixed for a running broker, but a stopped one may move.
  if (settings && ((port !== undefined && port !== settings.port) || (opts.host !== undefined && opts.host !== settings.host))) {
    saveSettings(layout, { ...settings, port: port ?? settings.port, host: opts.host ?? settings.host });
  }
  return false;
}

/**
 * The boot step of `up`, under a lock it never takes or releases: a running broker gets its owed
 * provisioning; a stopped one is created if new, planned from the KV record (ops/boot.ts), started
 * and provisioned. `up` calls it, and so does the cut resume (ops/cut-resume.ts) on its store.
 */
export async function bootRoot({ layout, lock, guards }: BootContext, opts: BootOptions): Promise<UpResult> {
  const requested = opts.space;
  const progress = opts.onProgress ?? (() => undefined);
  await failpoint("up-locked");
  // A running broker whose run/broker.json is unreadable is adopted, never restarted (issue #28).
  const orphan = adoptableBroker(layout, guards);
  if (orphan || brokerState(layout).running) assertRequestedSpace(layout, requested, accountInventory(layout).spaces.map((s) => s.name), guards);
  const adopted = orphan ? [adoptBroker(layout, orphan)] : [];
  const state = brokerState(layout);
  if (state.running) return upOnRunningBroker({ layout, lock, guards }, state.runtime, opts, adopted);

  const created = createOrMoveRoot(layout, opts);

  const notes: string[] = [];
  const plan = await planColdBoot(
    layout,
    (m) => {
      notes.push(m);
      progress(m);
    },
    guards,
  );
  const records = plan.spaces.map((name) => {
    const rec = loadSpaceAccount(layout, name);
    if (!rec) throw new CotalError("render-refused", `space ${name} is in the inventory but its record is missing on disk`, { next: "cotal broker reconcile" });
    return rec;
  });
  const rendered = renderRoot(layout, records, guards);
  const names = rendered.spaces.map((s) => s.name);
  const space = requested ?? (created ? names[0] : names.includes("default") ? "default" : names[0]) ?? "default";
  if (!names.includes(space)) {
    throw new CotalError("space-not-found", `space ${space} does not exist on ${layout.root} (it holds: ${names.join(", ")})`, {
      next: `cotal up --root ${layout.root}   # then: cotal space add ${space}`,
    });
  }
  // A resumed mutation boots the exact promoted bytes; anything else boots a fresh render.
  if (plan.kind === "seed" || plan.kind === "clean") writeUnservedConfig(layout.serverConf, rendered.text);
  const bootDigest = digestOfServerConf(layout) ?? rendered.digest;
  await failpoint("up-rendered");
  progress(`starting nats-server on ${rendered.settings.host}:${rendered.settings.port}`);
  const started = await startBroker(layout, { host: rendered.settings.host, port: rendered.settings.port, detach: opts.detach, guards });
  await failpoint("up-started");
  await finishColdBoot(layout, started.runtime.url, plan, bootDigest, guards);
  notes.push(...liftNotes(await liftStandingQuiesces(layout, lock, { guards }))); // a stopped online backup resumes to lifted
  // The same paced pool and batched creds writes as `space add` (provision/provision-batch.ts).
  // Only the spaces whose template the server lacks (one JSZ read, not a connection per space).
  const provisioned: ProvisionResult[] = await reprovisionSpaces(layout, rendered.broker, started.runtime, rendered.spaces, { onProvision: opts.onProvision, onNotice: progress, guards });
  settleProvisioning(layout); // every booted space was checked, and provisioned where it lacked its template, just above
  const account = rendered.spaces.find((s) => s.name === space);
  const credsFile = account ? ensureUserCreds(layout, account, "admin") : layout.userCredsFile(space, "admin");
  return {
    root: layout.root,
    created,
    alreadyRunning: false,
    url: started.runtime.url,
    pid: started.runtime.owner.pid,
    space,
    spaces: names,
    credsFile,
    multiSpace: rendered.broker.multiSpace,
    provisioned,
    serverVersion: started.runtime.serverVersion,
    notes,
    ...(started.child ? { child: started.child } : {}),
  };
}
