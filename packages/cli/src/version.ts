/** cotal's version, as packages/cli/package.json states it (test/version.test.ts keeps the two equal). */
export const VERSION = "0.1.0";
