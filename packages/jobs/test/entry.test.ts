import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

describe("the package's entry", () => {
  it("lists every public name (no export *), so the surface changes only on purpose", () => {
    const text = readFileSync(new URL("../src/index.ts", import.meta.url), "utf8").replace(/\/\/.*$/gm, "");
    expect(text).not.toMatch(/export\s+\*/);
    expect(text).toMatch(/export\s+\{/);
  });
});
