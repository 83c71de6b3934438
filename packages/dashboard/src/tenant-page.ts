import { formatBytes, QUOTA_FIELDS, type SpaceQuota } from "@cotal/core/light";
import { backupCell } from "./backup-cell.js";
import { boardQueueHref } from "./board-names.js";
import { Html, html } from "./html.js";
import { factHtml, journalFact, lockFact, pendingFact } from "./root-facts.js";
import { rootVerdict, spaceSeverity } from "./severity.js";
import { shell } from "./shell.js";
import type { QueueStatus } from "@cotal/jobs";
import type { DashboardSpace, QueuesSection, TenantPageData } from "./tenant-data.js";
import { DEFAULT_REFRESH, PAGE_SIZES, pageHref, pageOfSpaces, parseSpaceQuery, type SpacePage, type SpaceQuery } from "./paging.js";

const BYTE_FIELDS = new Set<keyof SpaceQuota>(["disk", "mem", "payload"]);

function quotaText(q: SpaceQuota | null, err?: string): Html {
  if (!q) return html`<span class="muted">${err ?? "no record on disk"}</span>`;
  return html`${QUOTA_FIELDS.map((f, i) => html`${i > 0 ? " · " : ""}${f} ${q[f] < 0 ? "∞" : BYTE_FIELDS.has(f) ? formatBytes(q[f]) : q[f]}`)}`;
}

/** The link from the overview (at /tenants) to a tenant's own page. */
export function tenantHref(name: string, query?: SpaceQuery): string {
  return `tenants/${encodeURIComponent(name)}${query && query.refresh === 0 ? "?refresh=0" : ""}`;
}

function spaceRow(s: DashboardSpace, query: SpaceQuery): Html {
  return html`<tr data-space="${s.name}">
<td class="name"><a href="${tenantHref(s.name, query)}">${s.name}</a></td><td class="state state-${s.state} sev-${spaceSeverity(s.state)}">${s.state}</td>
<td>${s.inConfig ? "yes" : "no"}</td><td>${s.inInventory === null ? "?" : s.inInventory ? "yes" : "no"}</td>
<td class="mono">${s.publicKey ?? "—"}</td><td>${s.createdAt ?? "—"}</td>
<td class="quota">${quotaText(s.quota, s.quotaError)}</td>
<td class="backup">${backupCell(s)}</td>
</tr>`;
}

type Failed = QueueStatus["failed"][number] & { type: string };

/** Pure: one line per queue, space and reason (newest first, as BullMQ lists them): a schedule failing every few seconds is one line with its count, not twenty. */
export function failedLines(failed: readonly Failed[]): (Failed & { count: number })[] {
  const out = new Map<string, Failed & { count: number }>();
  for (const f of failed) {
    const key = JSON.stringify([f.type, f.space ?? f.id, f.reason]);
    const seen = out.get(key);
    if (seen) seen.count += 1;
    else out.set(key, { ...f, count: 1 });
  }
  return [...out.values()];
}

function queuesBlock(q: QueuesSection): Html {
  if (!q.reachable) {
    return html`<section id="queues"><h2>Queues</h2><p class="warn" id="redis-unreachable">Redis is unreachable: ${q.error}</p>
<p class="muted">Start it (<code>bash infra/redis.sh start</code>) or point REDIS_URL at one; this page reads the state again on every visit.</p></section>`;
  }
  const states = ["waiting", "active", "delayed", "completed", "failed"] as const;
  return html`<section id="queues"><h2>Queues <a href="queues">(Bull Board)</a></h2><p class="muted">Redis ${q.redis}</p>
<div class="scroll"><table><thead><tr><th>queue</th><th>workers</th>${states.map((s) => html`<th>${s}</th>`)}</tr></thead><tbody>
${q.queues.map((x) => html`<tr data-queue="${x.type}"><td><a href="${boardQueueHref(x.type, x.counts.failed > 0 ? "failed" : undefined)}">${x.type}</a></td><td>${x.workers}</td>${states.map((s) => html`<td>${x.counts[s]}</td>`)}</tr>`)}
</tbody></table></div>
${failedLines(q.queues.flatMap((x) => x.failed.map((f) => ({ ...f, type: x.type })))).map((f) => html`<p class="warn failed-job">FAILED ${f.type} ${f.space ?? f.id}${f.count > 1 ? ` ×${f.count}` : ""} after ${f.attemptsMade} attempt(s)${f.failedAt ? `, last at ${f.failedAt}` : ""}: ${f.reason}</p>`)}
</section>`;
}

/** The root's headline: its state in its colour, why, and the core's `next` (red states are the ones a verb refuses on). */
function headline(d: TenantPageData): Html {
  const v = rootVerdict(d.state, d.spaces);
  return html`<dt>state</dt><dd><span id="root-state" class="state state-${d.state} sev-${v.severity}">${v.label}</span> — ${d.why}
${d.next ? html`<div class="next" id="next">next: <code>${d.next}</code></div>` : ""}
${v.held.length > 0 ? html`<div id="held" class="sev-${v.severity}">held: ${v.held.slice(0, 20).map((h, i) => html`${i > 0 ? ", " : ""}<a href="${tenantHref(h.name)}">${h.name}</a> ${h.state}`)}${v.held.length > 20 ? ` and ${v.held.length - 20} more` : ""}</div>` : ""}</dd>`;
}

function summary(d: TenantPageData): Html {
  const b = d.broker;
  return html`<section id="summary"><h2>Root</h2><dl>
<dt>root</dt><dd class="mono">${d.root}</dd>
${headline(d)}
<dt>broker</dt><dd>${b.running ? `running, pid ${b.pid}, ${b.url}, nats-server ${b.serverVersion}, since ${b.startedAt}` : `stopped${b.staleRuntime ? " (stale runtime record)" : ""}`}</dd>
<dt>generation</dt><dd id="generation">${d.generation ?? "—"}</dd>
<dt>appliedGeneration</dt><dd id="applied-generation" class="${d.generation !== null && d.appliedGeneration !== null && d.appliedGeneration < d.generation ? "sev-block" : ""}">${d.appliedGeneration ?? "—"}</dd>
${d.inventoryError ? html`<dt>inventory</dt><dd class="warn">${d.inventoryError}</dd>` : ""}
<dt>pending claim</dt><dd>${d.pending ? factHtml(pendingFact(d.pending), "pending") : html`<span id="pending">none</span>`}</dd>
<dt>lock holder</dt><dd>${d.lock ? factHtml(lockFact(d.lock), "lock") : html`<span id="lock">none</span>`}</dd>
<dt>journal</dt><dd>${d.journalError ? html`<span class="sev-block" id="journal">${d.journalError}</span>` : d.journal ? factHtml(journalFact(d.journal, d.quiesced.find((q) => d.journal?.op === "quiesce" && q.space === d.journal.space)?.owner?.status), "journal") : html`<span id="journal">none</span>`}</dd>
${d.quiesced.length > 0 ? html`<dt>quiesced</dt><dd id="quiesced">${d.quiesced.map((q) => html`<div class="sev-${q.owner?.status === "dead" ? "block" : "warn"}">${q.space} (${q.source}${q.stage ? `, ${q.stage}` : ""}${q.owner ? `, pid ${q.owner.pid} ${q.owner.status}` : ""})</div>${q.next ? html`<div class="next">next: <code>${q.next}</code></div>` : ""}`)}</dd>` : ""}
${d.provisioningOwed.length > 0 ? html`<dt>provisioning owed</dt><dd class="sev-block">${d.provisioningOwed.join(", ")}</dd>` : ""}
</dl>
${d.corrupt.map((c) => html`<p class="sev-block">CORRUPT ${c.path}: ${c.reason}</p>`)}
</section>`;
}

function pager(p: SpacePage, query: SpaceQuery): Html {
  const first = p.matched === 0 ? 0 : (p.page - 1) * query.size + 1;
  const last = Math.min(p.page * query.size, p.matched);
  return html`<p class="pager" id="pager">showing ${first}–${last} of ${p.matched}${p.matched !== p.total ? ` (of ${p.total} spaces)` : ""}, page ${p.page} of ${p.pages}
${p.page > 1 ? html` <a rel="prev" href="${pageHref(query, { page: p.page - 1 })}">previous</a>` : ""}${p.page < p.pages ? html` <a rel="next" href="${pageHref(query, { page: p.page + 1 })}">next</a>` : ""}</p>`;
}

function spacesBlock(d: TenantPageData, query: SpaceQuery): Html {
  const p = pageOfSpaces(d.spaces, query);
  return html`<section id="spaces"><h2>Spaces (${d.spaces.length})</h2>
<form method="get" action="tenants" id="filter"><input type="search" name="q" value="${query.q}" placeholder="name contains" aria-label="name contains">
<select name="state" aria-label="state"><option value="">every state</option>${p.byState.map(([st, n]) => html`<option value="${st}"${st === query.state ? html` selected` : ""}>${st} (${n})</option>`)}</select>
<select name="size" aria-label="page size">${PAGE_SIZES.map((n) => html`<option value="${n}"${n === query.size ? html` selected` : ""}>${n} a page</option>`)}</select>
${query.refresh === 0 ? html`<input type="hidden" name="refresh" value="0">` : ""}<button type="submit">show</button></form>
<p class="muted" id="states">${p.byState.map(([st, n], i) => html`${i > 0 ? " · " : ""}<a class="sev-${spaceSeverity(st)}" href="${pageHref(query, { state: st, page: 1 })}">${st} ${n}</a>`)}</p>
${pager(p, query)}
<div class="scroll"><table><thead><tr><th>name</th><th>state</th><th>in server.conf</th><th>in KV</th><th>account</th><th>created</th><th>quota</th><th>last queued backup</th></tr></thead>
<tbody>${p.rows.map((s) => spaceRow(s, query))}</tbody></table></div>
${d.spaces.length === 0 ? html`<p class="muted" id="no-spaces">no spaces yet: cotal space add NAME</p>` : p.matched === 0 ? html`<p class="muted" id="no-match">no space matches this filter</p>` : ""}
</section>`;
}

/**
 * The tenants overview: server-rendered, every value escaped by the `html` tag, no script. `query`
 * picks one page of the spaces (`?q=&state=&size=&page=`) and the reload (`?refresh=`); the JSON
 * endpoint keeps every space.
 */
export function renderTenantPage(d: TenantPageData, query: SpaceQuery = parseSpaceQuery({})): string {
  const body = html`<h1>cotal tenants</h1><p class="muted">read at ${d.readAt}</p>
${summary(d)}
${spacesBlock(d, query)}
${queuesBlock(d.queues)}`;
  return shell({ title: `cotal: ${d.root}`, refresh: query.refresh, refreshOff: pageHref(query, { refresh: 0 }), refreshOn: pageHref(query, { refresh: DEFAULT_REFRESH }), up: "" }, body);
}
