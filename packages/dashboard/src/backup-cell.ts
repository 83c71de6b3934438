import { formatBytes } from "@cotal/core/light";
import { Html, html } from "./html.js";
import type { DashboardSpace } from "./tenant-data.js";

/**
 * The tenant page's backup cell: the last success, then the schedule with its last run. A failed
 * run is shown with its error and `next`, so a schedule that never succeeded never reads "none
 * recorded" as if nothing had happened (issue #29).
 */
export function backupCell(s: Pick<DashboardSpace, "lastBackup" | "backupSchedule">): Html {
  const run = s.backupSchedule?.lastRun ?? null;
  const last = s.lastBackup
    ? html`succeeded ${s.lastBackup.finishedAt}<br><span class="mono">${s.lastBackup.artifact}</span>${s.lastBackup.bytes !== null ? html` (${formatBytes(s.lastBackup.bytes)})` : ""}`
    : run?.outcome === "failed"
      ? html`<span class="muted">no successful run recorded</span>`
      : html`<span class="muted">none recorded</span>`;
  const failed = run?.outcome === "failed"
    ? html`<br><span class="warn last-run-failed">last run FAILED ${run.at}: ${run.error ? `[${run.error.code}] ${run.error.message}` : (run.reason ?? "")}${run.error?.next ? html`<br>next: <code>${run.error.next}</code>` : ""}</span>`
    : run?.outcome === "skipped"
      ? html`<br><span class="muted">last run skipped ${run.at}: ${run.reason ?? ""}</span>`
      : "";
  const sched = s.backupSchedule ? html`<br>scheduled ${s.backupSchedule.every}${s.backupSchedule.next ? html`, next ${s.backupSchedule.next}` : ""}` : "";
  return html`${last}${failed}${sched}`;
}
