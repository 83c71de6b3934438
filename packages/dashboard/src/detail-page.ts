import { type UsageRow } from "@cotal/core";
import { formatBytes } from "@cotal/core/light";
import { backupCell } from "./backup-cell.js";
import { boardQueueHref } from "./board-names.js";
import { html, type Html } from "./html.js";
import { factHtml } from "./root-facts.js";
import { rootVerdict, spaceSeverity } from "./severity.js";
import { shell } from "./shell.js";
import { failedLines } from "./tenant-page.js";
import type { SpaceJobsSection, TenantDetail } from "./tenant-detail.js";
import { DEFAULT_REFRESH } from "./paging.js";

const BYTES = new Set<UsageRow["field"]>(["disk", "mem", "payload"]);

/** Pure: a quota or usage value: bytes in binary units, -1 unlimited, unknown a dash (as `cotal space info` prints them). */
export function usageCell(field: UsageRow["field"], v: number | null): string {
  if (v === null) return "—";
  if (v === -1) return "unlimited";
  return BYTES.has(field) ? formatBytes(v) : String(v);
}

/** At or above this share of its limit a row is red: the tenant is about to be refused (docs/quotas.md). */
const HIGH_PERCENT = 90;

function usageBlock(d: TenantDetail): Html {
  const rows = d.info.limits;
  return html`<section id="usage"><h2>Quota and usage</h2>
${d.info.usage.read ? html`<p class="muted">usage read from the account at ${d.info.usage.readAt}</p>` : html`<p class="warn" id="usage-not-read">usage: ${d.info.usage.reason}</p>`}
<div class="scroll"><table><thead><tr><th>field</th><th>used</th><th>limit</th><th>use</th></tr></thead><tbody>
${rows.map((r) => html`<tr data-field="${r.field}"${r.percent !== null && r.percent >= HIGH_PERCENT ? html` class="sev-block"` : ""}><td>${r.field}</td><td>${usageCell(r.field, r.used)}</td><td>${usageCell(r.field, r.limit)}</td>
<td>${r.percent === null ? "" : html`<span class="bar${r.percent >= HIGH_PERCENT ? " high" : ""}"><span style="width:${Math.min(100, r.percent)}%"></span></span> ${r.percent.toFixed(1)}%`}</td></tr>`)}
</tbody></table></div></section>`;
}

function streamsBlock(d: TenantDetail): Html {
  const total = d.streams.reduce((n, s) => n + s.bytes, 0);
  return html`<section id="streams"><h2>Streams and KV buckets (${d.streams.length})</h2>
${d.streams.length === 0 ? html`<p class="muted">none in the store${d.info.publicKey ? "" : " (no account record on disk)"}</p>` : html`<div class="scroll"><table><thead><tr><th>name</th><th>kind</th><th>on disk</th></tr></thead><tbody>
${d.streams.map((s) => html`<tr data-stream="${s.name}"><td class="mono">${s.kind === "kv" ? s.name.slice(3) : s.kind === "object" ? s.name.slice(4) : s.name}</td><td>${s.kind === "kv" ? "KV bucket" : s.kind === "object" ? "object store" : "stream"}</td><td>${formatBytes(s.bytes)}</td></tr>`)}
</tbody></table></div><p class="muted">${formatBytes(total)} in the store's files (messages, indexes, consumers)</p>`}
</section>`;
}

type LedgerRow = Extract<TenantDetail["info"]["users"], { read: true }>["rows"][number];

/** What a cred's expiry cell says beside the time: no expiry is flagged (revoking is the only way back), so are expired and near ones. */
const EXPIRY_FLAG: Record<LedgerRow["expiry"], string> = { never: "never: NO EXPIRY", expired: "EXPIRED", soon: "expires soon", ok: "" };
const EXPIRY_SEVERITY: Record<LedgerRow["expiry"], string> = { never: "warn", expired: "block", soon: "warn", ok: "ok" };

function ledgerRow(u: LedgerRow): Html {
  const unknown = u.source !== "ledger";
  return html`<tr data-user="${u.user}" data-key="${u.publicKey}" data-state="${u.state}" data-expiry="${u.expiry}" data-source="${unknown ? "unknown" : "ledger"}">
<td>${u.user}${unknown ? html` <span class="sev-warn unknown">unknown: minted before the ledger</span>` : ""}</td><td class="mono" title="${u.publicKey}">${u.keyShort}</td><td>${u.issuedAt}</td>
<td class="expiry sev-${EXPIRY_SEVERITY[u.expiry]}">${u.expiry === "never" ? EXPIRY_FLAG.never : html`${u.expiresAt ?? ""}${u.expiry === "ok" ? "" : html` <b>${EXPIRY_FLAG[u.expiry]}</b>`}`}</td>
<td>${u.admin ? "admin" : "user"}</td><td class="perms">${u.permissionsSummary}</td>
<td class="cred-state sev-${u.state === "active" ? "ok" : "block"}">${u.state}${u.revokedAt ? ` at ${u.revokedAt}` : ""}</td>
<td class="mono">${u.path}${u.onDisk ? "" : html` <span class="muted">(replaced or gone)</span>`}</td></tr>`;
}

/** The creds ledger (`cotal space users NAME`): every cred minted, the unknown ones too, never a seed. */
function ledgerBlock(d: TenantDetail): Html {
  const u = d.info.users;
  if (!u.read) return html`<section id="creds"><h2>Creds minted</h2><p class="warn" id="ledger-not-read">ledger: not read: ${u.reason}</p></section>`;
  return html`<section id="creds"><h2>Creds minted (${u.rows.length})</h2><p class="muted" id="ledger-summary">${u.summary}; as <code>cotal space users ${d.info.space}</code> lists them</p>
${u.unreadable > 0 ? html`<p class="warn">${u.unreadable} ledger line(s) unreadable</p>` : ""}
${u.rows.length === 0 ? html`<p class="muted" id="no-creds">no cred minted yet</p>` : html`<div class="scroll"><table><thead><tr><th>user</th><th>key</th><th>issued</th><th>expires</th><th>role</th><th>permissions</th><th>state</th><th>file</th></tr></thead><tbody>
${u.rows.map(ledgerRow)}
</tbody></table></div>`}
</section>`;
}

/** Creds files under the root the ledger does not list ($SYS observer): minted and expiry read from the file. */
function otherCredsBlock(d: TenantDetail): Html {
  if (d.creds.length === 0) return html``;
  return html`<section id="creds-files"><h2>Other creds files (${d.creds.length})</h2><div class="scroll"><table><thead><tr><th>user</th><th>minted</th><th>expires</th><th>status</th><th>file</th></tr></thead><tbody>
${d.creds.map((c) => html`<tr data-user="${c.user}"><td>${c.user}${c.kind === "sys-observer" ? html` <span class="muted">($SYS observer)</span>` : ""}</td><td>${c.issuedAt ?? "—"}</td><td>${c.status === "unreadable" ? "—" : (c.expiresAt ?? "never")}</td>
<td class="${c.status === "valid" ? "sev-ok" : "sev-block"}">${c.status}${c.error ? `: ${c.error}` : ""}</td><td class="mono">${c.path}</td></tr>`)}
</tbody></table></div></section>`;
}

function jobsBlock(j: SpaceJobsSection): Html {
  if (!j.reachable) return html`<section id="backups"><h2>Backups and jobs</h2><p class="warn" id="redis-unreachable">Redis is unreachable: ${j.error}</p></section>`;
  return html`<section id="backups"><h2>Backups and jobs</h2>
${j.schedules.length === 0 ? html`<p class="muted" id="no-schedule">no backup schedule (<code>cotal space backup NAME --queue --every 1d --out DIR</code>)</p>` : j.schedules.map((s) => html`<div class="backup" data-schedule="${s.schedulerId}"><b>${s.cadence}</b>${s.out ? html` into <span class="mono">${s.out}</span>` : ""}${s.keep !== null ? `, keep ${s.keep}` : ""}<br>
${backupCell({ lastBackup: s.lastSuccess ? { artifact: s.lastSuccess.artifact, bytes: s.lastSuccess.bytes, finishedAt: s.lastSuccess.at } : null, backupSchedule: { every: s.cadence.replace(/^cron /, ""), next: s.next, lastRun: s.lastRun } })}</div>`)}
${failedLines(j.failed).map((f) => html`<p class="sev-block failed-job">FAILED <a href="../${boardQueueHref(f.type, "failed")}">${f.type}</a> job${f.count > 1 ? ` ×${f.count}` : ` ${f.id}`}${f.failedAt ? `, last at ${f.failedAt}` : ""} after ${f.attemptsMade} attempt(s): ${f.reason}</p>`)}
<p><a href="../queues">all jobs in Bull Board</a></p></section>`;
}

function holdsBlock(d: TenantDetail): Html {
  return html`<section id="touching"><h2>What holds it</h2>
${d.touching.length === 0 ? html`<p class="sev-ok" id="nothing-holds">no journal entry, quiesce, pending claim or lock names this space</p>` : d.touching.map((f) => html`<div class="fact">${factHtml(f)}</div>`)}</section>`;
}

/** Pure: a tenant's own page (/tenants/NAME), every value escaped, no script. */
export function renderTenantDetail(d: TenantDetail, refresh = DEFAULT_REFRESH): string {
  const i = d.info;
  const root = rootVerdict(i.rootState, []);
  const conns = i.limits.find((r) => r.field === "conns");
  const body = html`<p><a href="../tenants${refresh === 0 ? "?refresh=0" : ""}" id="back">← all tenants</a></p>
<h1>tenant ${i.space}</h1><p class="muted">read at ${d.readAt}</p>
<section id="summary"><dl>
<dt>state</dt><dd><span id="space-state" class="state state-${i.state} sev-${spaceSeverity(i.state)}">${i.state}</span></dd>
<dt>root</dt><dd><span id="root-state" class="state sev-${root.severity}">${i.rootState}</span> — ${d.rootWhy}${d.rootNext ? html`<div class="next" id="next">next: <code>${d.rootNext}</code></div>` : ""}<div class="mono">${i.root}</div></dd>
<dt>account</dt><dd class="mono">${i.publicKey ?? "—"}</dd>
<dt>created</dt><dd>${i.createdAt ?? "—"}</dd>
<dt>broker</dt><dd>${i.broker.running ? `running ${i.broker.url ?? ""}` : "not running"}</dd>
<dt>connections</dt><dd id="connections">${conns?.used ?? "—"}${conns && conns.limit !== null ? ` of ${usageCell("conns", conns.limit)}` : ""}</dd>
</dl></section>
${holdsBlock(d)}
${usageBlock(d)}
${streamsBlock(d)}
${ledgerBlock(d)}
${otherCredsBlock(d)}
${jobsBlock(d.jobs)}`;
  return shell({ title: `cotal: ${i.space}`, refresh, refreshOff: `${encodeURIComponent(i.space)}?refresh=0`, refreshOn: encodeURIComponent(i.space), up: "../" }, body);
}
