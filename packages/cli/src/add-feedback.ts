import type { SagaPhase, SpaceAddOptions } from "@cotal/core";
import { FEW_NAMES } from "./batch-summary.js";
import { countLogger, phaseFeedback, phaseSubject, type Feedback } from "./feedback.js";

// The long verbs' feedback (docs/operating.md, "Progress"; issue #31: a phase line as soon as work
// starts): `space add` below, the single-space verbs (`space rm`, `space limits`) and backup/restore after it.

type AddHooks = Required<Pick<SpaceAddOptions, "onNotice" | "onPhase" | "onCommitted" | "onProvision">>;

/** A notice: a log line with --log-format, else its own line on stderr (a status line is cleared first). */
function noticeTo(fb: Feedback, notice: (m: string) => void, clearFirst: () => boolean = () => true): (m: string) => void {
  return (m) => {
    if (fb.log) return fb.log.info({ event: "notice" }, m);
    if (clearFirst()) fb.bar.stop();
    notice(m);
  };
}

/**
 * What a direct `space add` of `count` names reports: the saga's phases as a status line on a TTY
 * (log lines with --log-format), then provisioning: a bar past FEW_NAMES (a few names provision in
 * a blink, so a status line), counted log lines.
 */
export function addFeedback(fb: Feedback, count: number, notice: (m: string) => void): AddHooks {
  const logCount = countLogger(fb.log, "provisioned");
  const batch = count > FEW_NAMES;
  let provisioning = false;
  return {
    onNotice: noticeTo(fb, notice, () => !provisioning || !batch), // clears a status line, so the notice starts its own
    onPhase: phaseFeedback(fb, { verb: "space add", spaces: count }),
    onCommitted: () => {
      provisioning = true;
      if (batch) fb.bar.phase("provision", count);
      else fb.bar.status(`space add: ${count} space${count === 1 ? "" : "s"}: provisioning…`);
    },
    onProvision: (p) => {
      if (batch) fb.bar.update(p.done, p.total, p.space);
      logCount(p);
    },
  };
}

/**
 * A direct verb on one space (`space rm alpha`, `space limits alpha --max-disk 1G`): the preamble's
 * and the saga's phases as the add's status line ("space rm alpha: claiming…") on a TTY, one log line
 * per phase with --log-format. The caller stops `fb.bar` before it prints its result.
 */
export function spaceVerbFeedback(fb: Feedback, verb: string, space: string, notice: (m: string) => void): { onNotice: (m: string) => void; onPhase: (e: SagaPhase) => void } {
  return { onNotice: noticeTo(fb, notice), onPhase: phaseFeedback(fb, { verb, spaces: 1, space }) };
}

/**
 * Backup and restore draw a byte bar per phase of their own (commands/backup.ts); what runs before the
 * first (the lock, the journal, a quiesce) gets this line at once, so the screen is never blank.
 */
export function maintenanceStarting(fb: Feedback, verb: string, space: string): void {
  fb.bar.status(`${phaseSubject({ verb, spaces: 1, space })}: preparing…`);
}
