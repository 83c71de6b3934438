import { Html, html } from "./html.js";

/**
 * One stylesheet for every page: no font, image or script from anywhere (the pages' CSP is
 * `default-src 'none'`). Narrow screens (390 px): the body never scrolls sideways; a wide table
 * scrolls inside its `.scroll` box, long keys and paths wrap.
 */
export const STYLE = `*{box-sizing:border-box}html{-webkit-text-size-adjust:100%}
body{font:14px system-ui,sans-serif;margin:1rem 1.5rem;color:#222;overflow-wrap:anywhere}
h1{font-size:1.4rem;margin:.4rem 0}h2{font-size:1.1rem;margin:1.2rem 0 .4rem}
.scroll{overflow-x:auto;max-width:100%}table{border-collapse:collapse;width:100%}
th,td{border-bottom:1px solid #ddd;padding:.3rem .5rem;text-align:left;vertical-align:top;overflow-wrap:normal}th{background:#f4f4f4;white-space:nowrap}
dl{display:grid;grid-template-columns:max-content minmax(0,1fr);gap:.2rem 1rem}dt{font-weight:600}dd{margin:0;min-width:0}
.mono,code{font-family:ui-monospace,monospace;font-size:12px;overflow-wrap:anywhere}td.mono{white-space:nowrap;overflow-wrap:normal}
.muted,.sev-muted{color:#777}.warn,.sev-warn{color:#a40}.sev-warn.state{background:#fff3e0;font-weight:600}
.sev-ok{color:#070}.sev-block{color:#c00;background:#fdecea;font-weight:600}
.next{margin:.2rem 0}.next code{background:#f4f4f4;padding:0 .2rem}
nav{display:flex;flex-wrap:wrap;gap:.3rem 1rem;align-items:baseline}nav .refresh{margin-left:auto;font-size:12px}
form{display:flex;flex-wrap:wrap;gap:.4rem}input,select,button{font:inherit;max-width:100%}
.quota,.backup{font-size:12px}.bar{display:inline-block;width:5rem;height:.6rem;background:#eee;vertical-align:middle}
.bar>span{display:block;height:100%;background:#070}.bar.high>span{background:#c00}
@media (max-width:600px){body{margin:.6rem}dl{grid-template-columns:minmax(0,1fr)}dt{margin-top:.3rem}}`;

export interface ShellOptions {
  title: string;
  /** Seconds between reloads; 0: none. */
  refresh: number;
  /** The same page with the reload turned off, and on (the toggle's two links). */
  refreshOff: string;
  refreshOn: string;
  /** Relative path from this page to the dashboard's root ("" at /tenants, "../" at /tenants/NAME). */
  up: string;
}

/**
 * Pure: a page of the dashboard. Reading works without JavaScript: the reload is a
 * `<meta http-equiv=refresh>` that `?refresh=0` leaves out; the favicon is inline, so a
 * browser asks for nothing but the page.
 */
export function shell(o: ShellOptions, body: Html): string {
  const toggle = o.refreshOn === "" ? "" : o.refresh > 0
    ? html`<span class="refresh" id="refresh">reloads every ${o.refresh} s · <a href="${o.refreshOff}" id="refresh-off">stop</a></span>`
    : html`<span class="refresh" id="refresh">reload off · <a href="${o.refreshOn}" id="refresh-on">turn on</a></span>`;
  return html`<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
${o.refresh > 0 ? html`<meta http-equiv="refresh" content="${o.refresh}">` : ""}<link rel="icon" href="data:,"><title>${o.title}</title><style>${new Html(STYLE)}</style></head>
<body><nav><a href="${o.up}tenants">Tenants</a><a href="${o.up}queues">Queues (Bull Board)</a><a href="${o.up}api/tenants">JSON</a>${toggle}</nav>
${body}
</body></html>`.text;
}

/** Pure: a page that says what is not there and links back (the 404 of an unknown tenant). */
export function notFoundPage(what: string, up: string): string {
  return shell({ title: `cotal: ${what}`, refresh: 0, refreshOff: "", refreshOn: "", up }, html`<h1>Not found</h1><p id="not-found">${what}</p><p><a href="${up}tenants" id="back">back to the tenants</a></p>`);
}
