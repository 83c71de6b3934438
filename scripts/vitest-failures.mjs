// What counts as a failure in a vitest JSON report, for the scripts that read one (test-summary.mjs,
// inconclusive-only.mjs): each failed test, and a file that failed without one (an import error, a
// hook). numFailedTestSuites would count every describe level of a failing test instead.

/** The first non-blank line of a failure text, trimmed and cut to 200 characters. */
export function firstLine(text) {
  const line = String(text ?? "").split("\n").find((l) => l.trim() !== "") ?? "";
  return line.trim().slice(0, 200);
}

/** Every failure in `report`: `{ file, title, message }`; `title` is undefined when the file itself failed. */
export function reportFailures(report) {
  const out = [];
  for (const f of report?.testResults ?? []) {
    const red = (f.assertionResults ?? []).filter((a) => a.status === "failed");
    if (red.length === 0 && f.status === "failed") out.push({ file: f.name ?? "?", title: undefined, message: firstLine(f.message) });
    for (const a of red) out.push({ file: f.name ?? "?", title: a.fullName ?? a.title, message: firstLine(a.failureMessages?.[0]) });
  }
  return out;
}
