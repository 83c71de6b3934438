import { GUARDS_ON, type Guards } from "../guards.js";
import { existsSync } from "node:fs";
import { rerunWith, CotalError } from "../errors.js";
import { adoptableBroker } from "../broker/adopt.js";
import { assertPortFree } from "../broker/port-check.js";
import { brokerState } from "../broker/runtime.js";
import { serversOfRoot } from "../broker/server-scan.js";
import { DEFAULT_HOST, DEFAULT_PORT, loadSettings } from "../root/settings.js";
import { assertSpaceName } from "../names.js";
import { canonicalRoot } from "../root/canonical-root.js";
import { cutJournalPresent, resumeCut } from "./cut-resume.js";
import { bootRoot, type UpResult } from "./boot-root.js";
import { withVerb } from "../verb/verb.js";
import { bootCluster, clusterSizeOf, validClusterSize, type ClusterBootOptions } from "./boot-cluster.js";
import { isClusterRoot } from "../root/settings.js";
import { assertTemplateReplicas } from "../provision/template.js";
import { RootLayout } from "../root/layout.js";

export type { BootOptions, UpResult } from "./boot-root.js";

export interface UpOptions extends ClusterBootOptions {
  root: string;
  /** The guards the entry handed in (default: the ones handed to the core; docs/ablation.md). */
  guards?: Guards;
}

function validPort(port: number | undefined): number | undefined {
  if (port === undefined) return undefined;
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new CotalError("invalid-argument", `invalid port ${port}: expected 1-65535`, { next: "cotal up --port 4222" });
  }
  return port;
}

/**
 * `cotal up`: the verb preamble takes the lock (once, for both paths); a preserve-state cut in the
 * journal is resumed (ops/cut-resume.ts, which boots the preserved store), anything else boots.
 */
export async function up(opts: UpOptions): Promise<UpResult> {
  // Everything user-supplied is validated before the first write, so a refusal leaves the root untouched.
  const guards = opts.guards ?? GUARDS_ON;
  const space = opts.space === undefined ? undefined : assertSpaceName(opts.space, guards);
  const port = validPort(opts.port);
  const cluster = validClusterSize(opts.cluster, opts.detach, opts.singleSpace);
  const root = canonicalRoot(opts.root);
  if (opts.tenantReplicas !== undefined) assertTemplateReplicas(opts.tenantReplicas, cluster ?? clusterSizeOf(new RootLayout(root)), guards);
  const boot: ClusterBootOptions = { ...opts, ...(space !== undefined ? { space } : {}), ...(port !== undefined ? { port } : {}) };
  // A cluster root boots its nodes (docs/cluster.md); `--cluster` on a new root makes one.
  const clustered = cluster !== undefined || isClusterRoot(new RootLayout(root));
  // A new root's listener is checked before the lock makes its directory: a taken port creates nothing.
  if (!clustered && !existsSync(root) && !guards.UP_SKIP_PORT_CHECK) await assertPortFree(opts.host ?? DEFAULT_HOST, port ?? DEFAULT_PORT);
  // The probe only names the lock's purpose for `cotal status`; the journal read under the lock decides.
  const purpose = cutJournalPresent(root) ? "cotal up (resuming a preserve-state cut)" : "cotal up";
  return withVerb({ root, guards, purpose, journal: { verb: clustered ? "up cluster" : "up" }, certain: false }, async (v) => {
    if (clustered) {
      // A removal stuck on a stopped node passes: `up` restarts that node so the re-run can finish it.
      // A stopped online backup or restore (quiesce) is lifted by bootCluster; a cut or a rotation has no cluster resume.
      if (v.journal && v.journal.op !== "space-rm" && v.journal.op !== "quiesce") throw new CotalError("journal-blocked", `a ${v.journal.op} entry stands in the maintenance journal; a cluster root does not resume it yet`, { next: "cotal status   # docs/cluster.md \"Verbs on a cluster root\" says how to clear it" });
      return bootCluster(v, { ...boot, ...(v.journal ? { removing: v.journal.space } : {}) });
    }
    await assertListener(v.layout, port, opts.host, guards);
    if (v.journal?.op === "cut") return resumeCut(v, v.journal, boot);
    return bootRoot(v, boot);
  });
}

/**
 * The listener a single broker's `up` will use (issue #31): on a running broker a different --port is
 * refused naming the one it listens on; a stopped one needs its port free before anything starts.
 */
async function assertListener(layout: RootLayout, port: number | undefined, host: string | undefined, guards: Guards): Promise<void> {
  const state = brokerState(layout);
  if (state.running) {
    const running = state.runtime.port;
    if (port !== undefined && port !== running) {
      throw new CotalError("broker-running", `the broker of ${layout.root} runs on port ${running} (pid ${state.runtime.owner.pid}), not ${port}; nothing was changed`, {
        next: `${rerunWith({ "--port": null })}   # on the running broker; to move it: cotal down, then this command`,
        details: { running, requested: port },
      });
    }
    return;
  }
  if (guards.UP_SKIP_PORT_CHECK || adoptableBroker(layout, guards)) return; // adoptable: our own server holds the port
  // A server of this root with no record holds it: the start refuses naming it, with `cotal down` as the way out.
  if (serversOfRoot(layout, guards).length > 0) return;
  const settings = loadSettings(layout);
  await assertPortFree(host ?? settings?.host ?? DEFAULT_HOST, port ?? settings?.port ?? DEFAULT_PORT);
}
