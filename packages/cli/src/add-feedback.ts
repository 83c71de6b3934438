import type { SpaceAddOptions } from "@cotal/saga";
import { FEW_NAMES } from "./batch-summary.js";
import { countLogger, phaseFeedback, type Feedback } from "./feedback.js";

type AddHooks = Required<Pick<SpaceAddOptions, "onNotice" | "onPhase" | "onCommitted" | "onProvision">>;

/**
 * What a direct `space add` of `count` names reports (docs/operating.md, "Progress"): the saga's
 * phases as a status line on a TTY (log lines with --log-format), then provisioning: a bar past
 * FEW_NAMES (a few names provision in a blink, so a status line), counted log lines.
 */
export function addFeedback(fb: Feedback, count: number, notice: (m: string) => void): AddHooks {
  const logCount = countLogger(fb.log, "provisioned");
  const batch = count > FEW_NAMES;
  let provisioning = false;
  return {
    onNotice: (m) => {
      if (fb.log) return fb.log.info({ event: "notice" }, m);
      if (!provisioning || !batch) fb.bar.stop(); // clears a status line, so the notice starts its own
      notice(m);
    },
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
