import { describe, expect, it } from "vitest";
import type { JszAccount, SystemClient } from "../src/broker/system-client.js";
import { JSZ_PAGE, readAccountStreams, spacesOwingTemplate, templateInPlace, type AccountStreams } from "../src/provision/template-check.js";
import { spaceTemplate } from "../src/provision/template.js";
import type { AccountRecord } from "../src/root/records.js";

// The cold boot's template re-check (provision/template-check.ts): what counts as in place, and the
// JSZ paging on both server behaviours (2.9 sorts only from offset 1 and answers an unknown account with others).

/** What provisionSpace leaves: the server's JSON of each template stream's config. */
function provisioned(space: string, replicas = 1): AccountStreams {
  const tpl = spaceTemplate(space, replicas);
  const m: AccountStreams = new Map();
  for (const s of tpl.streams) m.set(s.name, { name: s.name, subjects: s.subjects, storage: "file", retention: "limits", description: s.description, num_replicas: s.replicas, max_msgs: -1 });
  for (const b of tpl.buckets) m.set(`KV_${b.bucket}`, { name: `KV_${b.bucket}`, subjects: [`$KV.${b.bucket}.>`], storage: "file", max_msgs_per_subject: b.history });
  return m;
}

describe("templateInPlace", () => {
  const tpl = spaceTemplate("alpha");
  it("the template as provisioned is in place (other fields do not matter)", () => {
    expect(templateInPlace(tpl, provisioned("alpha"))).toBe(true);
  });
  it("a missing account, stream or bucket, or a drifted field provisionSpace sets, is not", () => {
    const events = tpl.streams[0]!.name;
    const without = (name: string): AccountStreams => new Map([...provisioned("alpha")].filter(([k]) => k !== name));
    const changed = (field: string, value: unknown): AccountStreams => new Map([...provisioned("alpha")].map(([k, c]) => [k, k === events ? { ...c, [field]: value } : c]));
    expect(templateInPlace(tpl, undefined)).toBe(false);
    expect(templateInPlace(tpl, without(events))).toBe(false);
    expect(templateInPlace(tpl, without(`KV_${tpl.buckets[1]!.bucket}`))).toBe(false);
    expect(templateInPlace(tpl, changed("description", "other"))).toBe(false);
    expect(templateInPlace(tpl, changed("subjects", ["cotal.x.>"]))).toBe(false);
    expect(templateInPlace(tpl, changed("num_replicas", 3))).toBe(false);
    expect(templateInPlace(tpl, changed("storage", "memory"))).toBe(false);
    expect(templateInPlace(spaceTemplate("alpha", 3), provisioned("alpha"))).toBe(false);
  });
});

/** A fake of the one JSZ call, sorting like 2.9.10 (only for an offset ≥ 1) or like 2.10+ (always). */
function fakeJsz(accounts: Map<string, AccountStreams>, sortsAtZero: boolean): { client: SystemClient; requests: number } {
  const state = { requests: 0 };
  const detail = (id: string): JszAccount => ({ id, stream_detail: [...(accounts.get(id) ?? new Map())].map(([name, config]) => ({ name, ...(config ? { config } : {}) })) });
  const client = {
    async accountStreams(page: { offset: number; limit: number; account?: string }): Promise<JszAccount[]> {
      state.requests++;
      const ids = [...accounts.keys()].reverse(); // map order: not sorted
      if (page.account !== undefined) {
        if (accounts.has(page.account)) return [detail(page.account)];
        if (sortsAtZero) return [];
      }
      const ordered = page.offset !== 0 || sortsAtZero ? [...ids].sort() : ids;
      return ordered.slice(page.offset, page.offset + page.limit).map(detail);
    },
  } as unknown as SystemClient;
  return { client, get requests() { return state.requests; } };
}

describe("readAccountStreams", () => {
  const ids = Array.from({ length: JSZ_PAGE * 2 + 7 }, (_, i) => `A${String(i).padStart(5, "0")}`);
  const recs = ids.map((id, i) => ({ name: `s${i}`, publicKey: id }) as AccountRecord);
  for (const sortsAtZero of [false, true]) {
    it(`sees every account across pages (${sortsAtZero ? "2.10+" : "2.9"} paging), asking only the unseen ones by name`, async () => {
      const accounts = new Map(recs.map((r) => [r.publicKey, provisioned(r.name)]));
      accounts.delete(ids[5]!); // an account the server never enabled
      accounts.set(ids[9]!, new Map([...provisioned("s9")].slice(1))); // lost its event stream
      const fake = fakeJsz(accounts, sortsAtZero);
      const seen = await readAccountStreams(fake.client, ids);
      expect(seen.size).toBe(ids.length - 1);
      expect(spacesOwingTemplate(recs, seen).map((r) => r.name)).toEqual(["s5", "s9"]);
      // 3 pages from offset 1, then the first account and the never-enabled one by name
      expect(fake.requests).toBe(3 + 2);
    });
  }
});
