import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, vi } from "vitest";
import { main } from "../../src/index.js";

/**
 * A fresh directory that is a root as far as the root check goes (it has auth/), removed after the
 * file's cells: for cells about flags and refusals, not about the root.
 */
export function scratchRoot(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  mkdirSync(join(dir, "auth"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/**
 * Runs the CLI in this process (`main`, so a file's `vi.mock`s apply) with stdout and stderr captured
 * rather than printed; resolves to the exit code and what each stream got.
 */
export async function runCli(argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = "";
  let stderr = "";
  const o = vi.spyOn(process.stdout, "write").mockImplementation((s: string | Uint8Array) => ((stdout += String(s)), true));
  const e = vi.spyOn(process.stderr, "write").mockImplementation((s: string | Uint8Array) => ((stderr += String(s)), true));
  try {
    return { code: await main(argv), stdout, stderr };
  } finally {
    e.mockRestore();
    o.mockRestore();
  }
}

/** The command a refusal printed on its `  next: ` line ("" when it printed none). */
export const nextOf = (stderr: string): string => stderr.split("\n").find((l) => l.startsWith("  next: "))?.slice("  next: ".length) ?? "";
