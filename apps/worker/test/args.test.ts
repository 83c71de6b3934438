import { describe, expect, it } from "vitest";
import { isCotalError } from "@cotal/core/errors";
import { workerArgs } from "../src/args.js";

describe("apps/worker arguments", () => {
  it("reads --concurrency, --root and --log-format", () => {
    expect(workerArgs(["--concurrency", "8", "--root", "/srv/cotal", "--log-format", "pretty"])).toEqual({ concurrency: 8, root: "/srv/cotal", logFormat: "pretty" });
    expect(workerArgs([])).toEqual({});
  });

  it.each([["--log-format", "xml"], ["--log-format"], ["--concurrency", "0"], ["--verbose"]])("refuses %s as invalid-payload (exit 2) with the usage as next step", (...argv) => {
    try {
      workerArgs(argv);
      expect.unreachable("accepted a bad argument");
    } catch (e) {
      expect(isCotalError(e) && e.code).toBe("invalid-payload");
      expect(isCotalError(e) && e.next).toMatch(/--log-format json\|pretty/);
    }
  });
});
