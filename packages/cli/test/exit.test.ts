import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const EXIT = fileURLToPath(new URL("../dist/exit.js", import.meta.url));
// a report far past a pipe's 64 KiB, then the exit a finished verb takes; the reader starts late
const script = (exit: string) =>
  `import(${JSON.stringify(EXIT)}).then(async (m) => { process.stdout.write("x".repeat(1_000_000) + "\\n"); ${exit}; })`;
const received = (exit: string) =>
  execFileSync("bash", ["-c", `"${process.execPath}" -e '${script(exit)}' | (sleep 0.3; wc -c)`], { encoding: "utf8" }).trim();

describe("exitFlushed", () => {
  it("hands a report larger than a pipe's buffer to a slow reader whole before exiting", () => {
    expect(received("await m.exitFlushed(0)")).toBe("1000001");
  });
  it("positive control: a bare process.exit drops what the pipe had no room for", () => {
    expect(Number(received("process.exit(0)"))).toBeLessThan(1_000_001);
  });
});
