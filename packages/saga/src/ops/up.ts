import { GUARDS_ON, type Guards } from "../guards.js";
import { SagaError } from "../errors.js";
import { assertSpaceName } from "../names.js";
import { canonicalRoot } from "../root/canonical-root.js";
import { cutJournalPresent, resumeCut } from "../maintenance/cut-resume.js";
import { bootRoot, type UpResult } from "./boot-root.js";
import { withVerb } from "./verb.js";
import { bootCluster, clusterSizeOf, isClusterRoot, validClusterSize, type ClusterBootOptions } from "./boot-cluster.js";
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
    throw new SagaError("invalid-argument", `invalid port ${port}: expected 1-65535`, { next: "cotal up --port 4222" });
  }
  return port;
}

/**
 * `cotal up`: the verb preamble takes the lock (once, for both paths); a preserve-state cut in the
 * journal is resumed (maintenance/cut-resume.ts, which boots the preserved store), anything else boots.
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
  // The probe only names the lock's purpose for `cotal status`; the journal read under the lock decides.
  const purpose = cutJournalPresent(root) ? "cotal up (resuming a preserve-state cut)" : "cotal up";
  return withVerb({ root, guards, purpose, journal: { verb: "up", cut: true, quiesce: true, liftsRestore: true, ...(clustered ? { anyRemoval: true } : {}) }, certain: false }, async (v) => {
    if (clustered) {
      // A removal stuck on a stopped node passes: `up` restarts that node so the re-run can finish it.
      // A stopped online backup or restore (quiesce) is lifted by bootCluster; a cut or a rotation has no cluster resume.
      if (v.journal && v.journal.op !== "space-rm" && v.journal.op !== "quiesce") throw new SagaError("journal-blocked", `a ${v.journal.op} entry stands in the maintenance journal; a cluster root does not resume it yet`, { next: "cotal status   # docs/cluster.md \"Verbs on a cluster root\" says how to clear it" });
      return bootCluster(v, { ...boot, ...(v.journal ? { removing: v.journal.space } : {}) });
    }
    if (v.journal?.op === "cut") return resumeCut(v, v.journal, boot);
    return bootRoot(v, boot);
  });
}
