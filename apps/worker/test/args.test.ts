import { describe, expect, it } from "vitest";
import { isSagaError } from "@cotal/saga";
import { workerArgs } from "../src/args.js";

describe("apps/worker arguments", () => {
  it("reads --concurrency, --root and --log-format", () => {
    expect(workerArgs(["--concurrency", "8", "--root", "/srv/cotal", "--log-format", "pretty"])).toEqual({ concurrency: 8, root: "/srv/cotal", logFormat: "pretty" });
    expect(workerArgs([])).toEqual({});
  });

  it.each([["--log-format", "xml"], ["--log-format"], ["--concurrency", "0"], ["--verbose"]])("refuses %s as invalid-argument with the usage as next step", (...argv) => {
    try {
      workerArgs(argv);
      expect.unreachable("accepted a bad argument");
    } catch (e) {
      expect(isSagaError(e) && e.code).toBe("invalid-argument");
      expect(isSagaError(e) && e.exit).toMatch(/--log-format json\|pretty/);
    }
  });
});
