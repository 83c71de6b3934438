import { SagaError } from "../errors.js";
import { assertSpaceName } from "../names.js";
import { canonicalRoot } from "../root/canonical-root.js";
import { cutJournalPresent, resumeCut } from "../maintenance/cut-resume.js";
import { bootRoot, type BootOptions, type UpResult } from "./boot-root.js";
import { withVerb } from "./verb.js";

export type { BootOptions, UpResult } from "./boot-root.js";

export interface UpOptions extends BootOptions {
  root: string;
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
  const space = opts.space === undefined ? undefined : assertSpaceName(opts.space);
  const port = validPort(opts.port);
  const root = canonicalRoot(opts.root);
  const boot: BootOptions = { ...opts, ...(space !== undefined ? { space } : {}), ...(port !== undefined ? { port } : {}) };
  // The probe only names the lock's purpose for `cotal status`; the journal read under the lock decides.
  const purpose = cutJournalPresent(root) ? "cotal up (resuming a preserve-state cut)" : "cotal up";
  return withVerb({ root, purpose, journal: { verb: "up", cut: true, quiesce: true, liftsRestore: true }, certain: false }, async (v) => {
    if (v.journal?.op === "cut") return resumeCut(v, v.journal, boot);
    return bootRoot(v, boot);
  });
}
