import { mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { isValidJobId, jobIdFor, JOB_TYPES, queueNameFor, rootKeyFor } from "../src/index.js";

const dir = mkdtempSync(join(tmpdir(), "cotal-jobs-ids-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("deterministic job ids", () => {
  it("are stable, per type and root, with no ':' and never all digits", () => {
    const key = rootKeyFor(dir);
    expect(key).toMatch(/^root_[0-9a-f]{24}$/);
    expect(rootKeyFor(dir)).toBe(key);
    for (const type of JOB_TYPES) {
      for (const name of ["a", "0", "123", "team-a", "x_1"]) {
        const id = jobIdFor(type, key, name);
        expect(id).toBe(`${type}.${key}.${name}`);
        expect(id).not.toContain(":");
        expect(id).not.toMatch(/^\d+$/);
        expect(isValidJobId(id)).toBe(true);
        expect(jobIdFor(type, key, name)).toBe(id);
      }
    }
    expect(jobIdFor("space-add", key, "a")).not.toBe(jobIdFor("space-rm", key, "a"));
    expect(queueNameFor("space-add", key)).not.toContain(":");
  });

  it("name the same root through a symlink the same way (realpath), and another root differently", () => {
    const link = `${dir}-link`;
    symlinkSync(dir, link);
    try {
      expect(rootKeyFor(link)).toBe(rootKeyFor(dir));
    } finally {
      rmSync(link);
    }
    const other = mkdtempSync(join(tmpdir(), "cotal-jobs-ids-"));
    expect(rootKeyFor(other)).not.toBe(rootKeyFor(dir));
    rmSync(other, { recursive: true });
  });

  it("the validity check agrees with BullMQ's rules (positive control: bad ids are caught)", () => {
    expect(isValidJobId("space-add:r:a")).toBe(false);
    expect(isValidJobId("42")).toBe(false);
    expect(isValidJobId("")).toBe(false);
    expect(isValidJobId("space-add.root_ab.a")).toBe(true);
    expect(() => jobIdFor("space-add", "root:x", "a")).toThrow(/not a valid BullMQ custom id/);
  });
});
