import { describe, expect, it } from "vitest";
import { effectiveFirstSeq } from "../src/internal.js";

describe("effectiveFirstSeq: an empty stream reads alike on every server", () => {
  it("a never-written stream: 0 (2.9.10, 2.14) and 1 after a 2.15 restore both mean next 1", () => {
    expect(effectiveFirstSeq({ messages: 0, first_seq: 0, last_seq: 0 })).toBe(1);
    expect(effectiveFirstSeq({ messages: 0, first_seq: 1, last_seq: 0 })).toBe(1);
  });
  it("a stream emptied after 5 messages is next 6 however it is spelled", () => {
    expect(effectiveFirstSeq({ messages: 0, first_seq: 6, last_seq: 5 })).toBe(6);
  });
  it("a stream with messages keeps its first sequence, so a real difference still shows", () => {
    expect(effectiveFirstSeq({ messages: 3, first_seq: 4, last_seq: 6 })).toBe(4);
    expect(effectiveFirstSeq({ messages: 3, first_seq: 4, last_seq: 6 })).not.toBe(effectiveFirstSeq({ messages: 3, first_seq: 1, last_seq: 6 }));
  });
});
