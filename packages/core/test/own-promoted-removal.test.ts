import { describe, expect, it } from "vitest";
import { ownPromotedRemoval } from "../src/ops/space-rm.js";
import { NEW, OLD, pending, rec } from "./fixtures/records.js";

// An offline re-run of a removal whose own claim was promoted ends there (docs/resume.md, "An offline removal").
const removal = (extra = {}) => pending({ op: "remove", adds: [], removes: ["alpha"], stagedDigest: NEW, ...extra });
const at = (record: ReturnType<typeof rec>) => ({ record, revision: 3 });

describe("ownPromotedRemoval", () => {
  it("this removal's claim, promoted (server.conf holds its staged bytes): yes", () => {
    expect(ownPromotedRemoval(at(rec({ pending: removal() })), "alpha", NEW)).toBe(true);
  });
  it("this removal's claim, proven but not committed: yes", () => {
    expect(ownPromotedRemoval(at(rec({ appliedGeneration: 8, configDigest: NEW, pending: removal() })), "alpha", NEW)).toBe(true);
  });
  it("staged but never renamed: no (the saga rolls it back and claims again)", () => {
    expect(ownPromotedRemoval(at(rec({ pending: removal() })), "alpha", OLD)).toBe(false);
  });
  it("another space's removal, a batch that also removes this one, or an add: no", () => {
    expect(ownPromotedRemoval(at(rec({ pending: removal({ removes: ["beta"] }) })), "alpha", NEW)).toBe(false);
    expect(ownPromotedRemoval(at(rec({ pending: removal({ op: "batch", removes: ["alpha", "beta"] }) })), "alpha", NEW)).toBe(false);
    expect(ownPromotedRemoval(at(rec({ pending: pending({ stagedDigest: NEW }) })), "alpha", NEW)).toBe(false);
  });
  it("nothing pending: no", () => {
    expect(ownPromotedRemoval(at(rec({})), "alpha", OLD)).toBe(false);
  });
});
