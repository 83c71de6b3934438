/** The running max read from server.conf's head (issue 15: the file is megabytes at 10,000 tenants), equal to a whole-file read. */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { jetStreamMaxInFile } from "../src/broker/jetstream-max.js";
import { renderedJetStreamMax } from "../src/render/server-config.js";

let dir: string | undefined;
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

function file(text: string): string {
  dir ??= mkdtempSync(join(tmpdir(), "cotal-jsmax-"));
  const path = join(dir, "server.conf");
  writeFileSync(path, text);
  return path;
}

const block = "jetstream {\n  store_dir: \"/x\"\n  max_file_store: 1234567890\n  max_memory_store: 987654321\n}\n";
const jwts = `resolver_preload: {\n${Array.from({ length: 2000 }, (_, i) => `  # space s${i}\n  A${i}: "eyJ${"x".repeat(60)}"\n`).join("")}}\n`;

describe("jetStreamMaxInFile", () => {
  it("finds the block in the head of a large config, as a whole-file read does", () => {
    const text = `listen: "127.0.0.1:4222"\n${block}${jwts}`;
    expect(text.length).toBeGreaterThan(64 * 1024);
    expect(jetStreamMaxInFile(file(text))).toEqual({ file: 1234567890, memory: 987654321 });
    expect(jetStreamMaxInFile(file(text))).toEqual(renderedJetStreamMax(text));
  });

  it("a value cut at the head's boundary is read whole, never as its first digits", () => {
    const text = `listen: "x"\n${block}${jwts}`;
    const cut = text.indexOf("987654321") + 4; // the head ends inside max_memory_store's value
    expect(jetStreamMaxInFile(file(text), cut)).toEqual({ file: 1234567890, memory: 987654321 });
  });

  it("a block past the head, or none: the whole file decides", () => {
    expect(jetStreamMaxInFile(file(`${jwts}${block}`), 1024)).toEqual({ file: 1234567890, memory: 987654321 });
    expect(jetStreamMaxInFile(file(`listen: "x"\n${jwts}`), 1024)).toBeUndefined();
    expect(jetStreamMaxInFile(file(block), 1 << 20)).toEqual({ file: 1234567890, memory: 987654321 }); // shorter than the head
  });
});
