import type { DashboardSpace } from "./tenant-data.js";

/** What the tenant page's query string asks for: one page of the spaces, filtered by name and state. */
export interface SpaceQuery {
  /** 1-based. */
  page: number;
  size: number;
  /** Substring of the space name; empty matches every space. */
  q: string;
  /** One state (`active`, `pending-add`, …); undefined matches every state. */
  state: string | undefined;
  /** Seconds between the page's own reloads (`?refresh=`); 0 is off. */
  refresh: number;
}

export const PAGE_SIZES = [50, 100, 500] as const;
const DEFAULT_SIZE = 100;
/** A few seconds: each reload reads the root again (status, the KV record, Redis), so not faster. */
export const DEFAULT_REFRESH = 5;
const REFRESH_RANGE = [2, 600] as const;

function one(v: unknown): string | undefined {
  return typeof v === "string" ? v : Array.isArray(v) && typeof v[0] === "string" ? v[0] : undefined;
}

/** Pure: `?refresh=` made safe: `0`/`off` turns the reload off, 2-600 s is kept, anything else is the default. */
export function parseRefresh(query: Record<string, unknown>): number {
  const raw = one(query.refresh)?.trim().toLowerCase();
  if (raw === undefined || raw === "") return DEFAULT_REFRESH;
  if (raw === "0" || raw === "off") return 0;
  const n = /^\d{1,3}$/.test(raw) ? Number(raw) : Number.NaN;
  return Number.isSafeInteger(n) && n >= REFRESH_RANGE[0] && n <= REFRESH_RANGE[1] ? n : DEFAULT_REFRESH;
}

/** Pure: a query string made safe (junk falls back to the defaults, never an error page). */
export function parseSpaceQuery(query: Record<string, unknown>): SpaceQuery {
  const page = Number.parseInt(one(query.page) ?? "", 10);
  const size = Number.parseInt(one(query.size) ?? "", 10);
  const state = one(query.state)?.trim();
  return {
    page: Number.isSafeInteger(page) && page >= 1 ? page : 1,
    size: (PAGE_SIZES as readonly number[]).includes(size) ? size : DEFAULT_SIZE,
    q: (one(query.q) ?? "").trim().slice(0, 200),
    state: state ? state : undefined,
    refresh: parseRefresh(query),
  };
}

export interface SpacePage {
  rows: DashboardSpace[];
  /** Every space on the root, and the ones the filter kept. */
  total: number;
  matched: number;
  /** The page shown (clamped to the last one) and how many there are (at least 1). */
  page: number;
  pages: number;
  /** Spaces per state across the whole root, for the state links. */
  byState: [string, number][];
}

/** Pure: at 10,000 tenants the page renders one slice, never one 10,000-row table. */
export function pageOfSpaces(spaces: readonly DashboardSpace[], query: SpaceQuery): SpacePage {
  const needle = query.q.toLowerCase();
  const counts = new Map<string, number>();
  const kept: DashboardSpace[] = [];
  for (const s of spaces) {
    counts.set(s.state, (counts.get(s.state) ?? 0) + 1);
    if ((query.state === undefined || s.state === query.state) && (needle === "" || s.name.toLowerCase().includes(needle))) kept.push(s);
  }
  const pages = Math.max(1, Math.ceil(kept.length / query.size));
  const page = Math.min(query.page, pages);
  return {
    rows: kept.slice((page - 1) * query.size, page * query.size),
    total: spaces.length,
    matched: kept.length,
    page,
    pages,
    byState: [...counts].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)),
  };
}

/** The page's own link for another slice of the same filter. */
export function pageHref(query: SpaceQuery, over: Partial<SpaceQuery>): string {
  const q = { ...query, ...over };
  const params = new URLSearchParams();
  if (q.q) params.set("q", q.q);
  if (q.state) params.set("state", q.state);
  if (q.size !== DEFAULT_SIZE) params.set("size", String(q.size));
  if (q.page > 1) params.set("page", String(q.page));
  if (q.refresh !== DEFAULT_REFRESH) params.set("refresh", String(q.refresh));
  const s = params.toString();
  return s ? `tenants?${s}` : "tenants";
}
