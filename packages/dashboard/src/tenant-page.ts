import { formatBytes, QUOTA_FIELDS, type SpaceQuota } from "@cotal/saga";
import { backupCell } from "./backup-cell.js";
import { Html, html } from "./html.js";
import type { DashboardSpace, QueuesSection, TenantPageData } from "./tenant-data.js";
import { PAGE_SIZES, pageHref, pageOfSpaces, parseSpaceQuery, type SpacePage, type SpaceQuery } from "./paging.js";

const BYTE_FIELDS = new Set<keyof SpaceQuota>(["disk", "mem", "payload"]);

function quotaText(q: SpaceQuota | null, err?: string): Html {
  if (!q) return html`<span class="muted">${err ?? "no record on disk"}</span>`;
  return html`${QUOTA_FIELDS.map((f, i) => html`${i > 0 ? " · " : ""}${f} ${q[f] < 0 ? "∞" : BYTE_FIELDS.has(f) ? formatBytes(q[f]) : q[f]}`)}`;
}

function spaceRow(s: DashboardSpace): Html {
  return html`<tr data-space="${s.name}">
<td class="name">${s.name}</td><td class="state state-${s.state}">${s.state}</td>
<td>${s.inConfig ? "yes" : "no"}</td><td>${s.inInventory === null ? "?" : s.inInventory ? "yes" : "no"}</td>
<td class="mono">${s.publicKey ?? "—"}</td><td>${s.createdAt ?? "—"}</td>
<td class="quota">${quotaText(s.quota, s.quotaError)}</td>
<td class="backup">${backupCell(s)}</td>
</tr>`;
}

function queuesBlock(q: QueuesSection): Html {
  if (!q.reachable) {
    return html`<section id="queues"><h2>Queues</h2><p class="warn" id="redis-unreachable">Redis is unreachable: ${q.error}</p>
<p class="muted">Start it (<code>bash infra/redis.sh start</code>) or point REDIS_URL at one; this page reloads the state on every visit.</p></section>`;
  }
  const states = ["waiting", "active", "delayed", "completed", "failed"] as const;
  return html`<section id="queues"><h2>Queues <a href="queues">(Bull Board)</a></h2><p class="muted">Redis ${q.redis}</p>
<table><thead><tr><th>queue</th><th>workers</th>${states.map((s) => html`<th>${s}</th>`)}</tr></thead><tbody>
${q.queues.map((x) => html`<tr data-queue="${x.type}"><td>${x.type}</td><td>${x.workers}</td>${states.map((s) => html`<td>${x.counts[s]}</td>`)}</tr>`)}
</tbody></table>
${q.queues.flatMap((x) => x.failed.map((f) => html`<p class="warn">FAILED ${x.type} ${f.space ?? f.id} after ${f.attemptsMade} attempt(s): ${f.reason}</p>`))}
</section>`;
}

function summary(d: TenantPageData): Html {
  const b = d.broker;
  const p = d.pending;
  const j = d.journal;
  return html`<section id="summary"><h2>Root</h2><dl>
<dt>root</dt><dd class="mono">${d.root}</dd>
<dt>state</dt><dd id="root-state" class="state-${d.state}">${d.state} — ${d.why}</dd>
<dt>broker</dt><dd>${b.running ? `running, pid ${b.pid}, ${b.url}, nats-server ${b.serverVersion}, since ${b.startedAt}` : `stopped${b.staleRuntime ? " (stale runtime record)" : ""}`}</dd>
<dt>generation</dt><dd id="generation">${d.generation ?? "—"}</dd>
<dt>appliedGeneration</dt><dd id="applied-generation">${d.appliedGeneration ?? "—"}</dd>
${d.inventoryError ? html`<dt>inventory</dt><dd class="warn">${d.inventoryError}</dd>` : ""}
<dt>pending claim</dt><dd id="pending">${p ? `${p.op} +[${p.adds.join(", ")}] -[${p.removes.join(", ")}] → generation ${p.generation} by ${p.writer} since ${p.claimedAt}${p.stagedDigest ? " (staged)" : ""}` : "none"}</dd>
<dt>lock holder</dt><dd id="lock">${d.lock === "corrupt" ? "unreadable lock file" : d.lock ? `pid ${d.lock.pid} on ${d.lock.host} (${d.lock.purpose}, ${d.lock.status}, since ${d.lock.startedAt})` : "none"}</dd>
<dt>journal</dt><dd id="journal">${d.journalError ? d.journalError : !j ? "none" : j.op === "space-rm" ? `space-rm ${j.space} since ${j.startedAt}${j.streamsDeleted ? " (streams deleted)" : ""} — next: cotal space rm ${j.space} --yes` : j.op === "cut" ? `preserve-state cut ${j.cutId}, ${j.state} since ${j.readyAt ?? j.startedAt}${j.attempt ? `; ${j.attempt.kind} attempt on ${j.attempt.space}` : ""}` : j.op === "quiesce" ? `quiesce of space ${j.space} by online backup ${j.attemptId} (${j.stage}) since ${j.startedAt}` : `rotate-sys to generation ${j.generation} since ${j.startedAt}`}</dd>
${d.quiesced.length > 0 ? html`<dt>quiesced</dt><dd id="quiesced" class="warn">${d.quiesced.map((q) => `${q.space} (${q.source}${q.stage ? `, ${q.stage}` : ""})${q.next ? ` — next: ${q.next}` : ""}`).join("; ")}</dd>` : ""}
${d.provisioningOwed.length > 0 ? html`<dt>provisioning owed</dt><dd class="warn">${d.provisioningOwed.join(", ")} — next: cotal up --detach</dd>` : ""}
</dl>
${d.corrupt.map((c) => html`<p class="warn">CORRUPT ${c.path}: ${c.reason}</p>`)}
</section>`;
}

const STYLE = `body{font:14px system-ui,sans-serif;margin:1.5rem;color:#222}table{border-collapse:collapse;width:100%}
th,td{border-bottom:1px solid #ddd;padding:.3rem .5rem;text-align:left;vertical-align:top}th{background:#f4f4f4}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.2rem 1rem}dt{font-weight:600}.mono{font-family:monospace;font-size:12px}
.muted{color:#777}.warn{color:#a40}.state-active,.state-clean{color:#070}.quota{font-size:12px}nav a{margin-right:1rem}
.state-removing,.state-quiesced{color:#a40;background:#fff3e0;font-weight:600}`;

function pager(p: SpacePage, query: SpaceQuery): Html {
  const first = p.matched === 0 ? 0 : (p.page - 1) * query.size + 1;
  const last = Math.min(p.page * query.size, p.matched);
  return html`<p class="pager" id="pager">showing ${first}–${last} of ${p.matched}${p.matched !== p.total ? ` (of ${p.total} spaces)` : ""}, page ${p.page} of ${p.pages}
${p.page > 1 ? html` <a rel="prev" href="${pageHref(query, { page: p.page - 1 })}">previous</a>` : ""}${p.page < p.pages ? html` <a rel="next" href="${pageHref(query, { page: p.page + 1 })}">next</a>` : ""}</p>`;
}

function spacesBlock(d: TenantPageData, query: SpaceQuery): Html {
  const p = pageOfSpaces(d.spaces, query);
  return html`<section id="spaces"><h2>Spaces (${d.spaces.length})</h2>
<form method="get" action="tenants" id="filter"><input type="search" name="q" value="${query.q}" placeholder="name contains">
<select name="state"><option value="">every state</option>${p.byState.map(([st, n]) => html`<option value="${st}"${st === query.state ? html` selected` : ""}>${st} (${n})</option>`)}</select>
<select name="size">${PAGE_SIZES.map((n) => html`<option value="${n}"${n === query.size ? html` selected` : ""}>${n} a page</option>`)}</select>
<button type="submit">show</button></form>
<p class="muted" id="states">${p.byState.map(([st, n], i) => html`${i > 0 ? " · " : ""}<a href="${pageHref(query, { state: st, page: 1 })}">${st} ${n}</a>`)}</p>
${pager(p, query)}
<table><thead><tr><th>name</th><th>state</th><th>in server.conf</th><th>in KV</th><th>account</th><th>created</th><th>quota</th><th>last queued backup</th></tr></thead>
<tbody>${p.rows.map(spaceRow)}</tbody></table>
${d.spaces.length === 0 ? html`<p class="muted" id="no-spaces">no spaces yet: cotal space add NAME</p>` : p.matched === 0 ? html`<p class="muted" id="no-match">no space matches this filter</p>` : ""}
</section>`;
}

/**
 * The tenant page: server-rendered, every value escaped by the `html` tag, no script. `query` picks
 * one page of the spaces (`?q=&state=&size=&page=`); the JSON endpoint keeps every space.
 */
export function renderTenantPage(d: TenantPageData, query: SpaceQuery = parseSpaceQuery({})): string {
  return html`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>cotal: ${d.root}</title><style>${new Html(STYLE)}</style></head>
<body><nav><a href="tenants">Tenants</a><a href="queues">Queues (Bull Board)</a><a href="api/tenants">JSON</a></nav>
<h1>cotal tenants</h1><p class="muted">read at ${d.readAt}; reload the page to read again</p>
${summary(d)}
${spacesBlock(d, query)}
${queuesBlock(d.queues)}
</body></html>`.text;
}
