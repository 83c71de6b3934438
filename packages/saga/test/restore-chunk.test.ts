import { describe, expect, it } from "vitest";
import { restoreChunkSize } from "../src/maintenance/stream-snapshot.js";

describe("restore upload chunk (stream-snapshot.ts)", () => {
  it("is 1 MiB under the root's default 8 MiB max_payload, half a smaller one, never under 1 KiB", () => {
    expect(restoreChunkSize(8 * 1024 * 1024)).toBe(1024 * 1024);
    expect(restoreChunkSize(1024 * 1024)).toBe(512 * 1024);
    expect(restoreChunkSize(4096)).toBe(2048);
    expect(restoreChunkSize(1000)).toBe(1024);
    expect(restoreChunkSize(undefined)).toBe(512 * 1024);
  });
});
