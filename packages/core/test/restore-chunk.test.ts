import { describe, expect, it } from "vitest";
import { restoreChunkSize } from "../src/backup/stream-snapshot.js";

describe("restore upload chunk (stream-snapshot.ts)", () => {
  it("is 1 MiB under an 8 MiB max_payload, all of a smaller one (a tenant user's 1 MiB), never under 1 KiB", () => {
    expect(restoreChunkSize(8 * 1024 * 1024)).toBe(1024 * 1024);
    expect(restoreChunkSize(1024 * 1024)).toBe(1024 * 1024);
    expect(restoreChunkSize(4096)).toBe(4096);
    expect(restoreChunkSize(1000)).toBe(1024);
    expect(restoreChunkSize(undefined)).toBe(1024 * 1024);
  });
});
