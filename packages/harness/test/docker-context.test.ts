import { createOperator, createAccount, createUser } from "@nats-io/nkeys";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { buildContext, copiedFiles, copyInstructions, NKEY_SEED, secretFindings } from "../src/build-context.js";
import { repoRoot } from "../src/cotal-process.js";

// The image context, computed as `docker build` would (no engine here): what the Dockerfile's COPY takes
// from the repo root through /.dockerignore, and that no root, seed, creds or host build output is in it
// (issue #32 finding 1: `COPY . .` shipped .cotal/ with the operator seed, node_modules and .tools).
const REPO = repoRoot();
const DOCKERFILE = join(REPO, "infra", "docker", "Dockerfile");
const scratch = mkdtempSync(join(tmpdir(), "cotal-context-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const seedText = (): string => new TextDecoder().decode(createOperator().getSeed());

/** Every file the Dockerfile's COPY instructions take from `contextDir`. */
function imageFiles(contextDir: string): { copies: ReturnType<typeof copyInstructions>; taken: string[] } {
  const context = buildContext(contextDir);
  const copies = copyInstructions(readFileSync(DOCKERFILE, "utf8"));
  return { copies, taken: [...new Set(copies.flatMap((c) => copiedFiles(c, context)))].sort() };
}

function plant(dir: string, rel: string, text: string): void {
  mkdirSync(dirname(join(dir, rel)), { recursive: true });
  writeFileSync(join(dir, rel), text);
}

describe("the image build context (/.dockerignore)", () => {
  it("the Dockerfile's one COPY takes the workspace's sources and manifests from this checkout, and no secret", () => {
    const { copies, taken } = imageFiles(REPO);
    expect(copies.map((c) => [c.sources, c.dest])).toEqual([[["."], "."]]);
    // what `pnpm install --frozen-lockfile && pnpm build` needs
    for (const f of ["package.json", "pnpm-lock.yaml", "pnpm-workspace.yaml", ".npmrc", "turbo.json", "tsconfig.base.json", "packages/cli/package.json", "packages/cli/bundle.mjs", "packages/core/src/index.ts", "apps/worker/src/main.ts", "test-live/package.json"]) expect(taken).toContain(f);
    // nothing the host built, installed or ran
    for (const prefix of ["node_modules/", ".git/", ".tools/", ".cotal/", ".test-results/", "reports/", "test-live/suites/", "packages/cli/dist/", "packages/core/node_modules/"]) expect(taken.filter((f) => f.startsWith(prefix))).toEqual([]);
    expect(secretFindings(REPO, taken)).toEqual([]);
  });

  it("a root planted anywhere (operator seed, account and user seeds, creds), dependencies and tools stay out; a seed in a source file is caught", () => {
    const dir = mkdtempSync(join(scratch, "ctx-"));
    cpSync(join(REPO, ".dockerignore"), join(dir, ".dockerignore"));
    for (const f of ["package.json", "pnpm-lock.yaml", "packages/cli/package.json", "packages/core/src/index.ts"]) plant(dir, f, readFileSync(join(REPO, f), "utf8"));
    const planted = {
      ".cotal/auth/broker.secrets/operator.seed": seedText(),
      ".cotal/auth/account.61.json": JSON.stringify({ seed: new TextDecoder().decode(createAccount().getSeed()) }),
      ".cotal/space.61/users/u.creds": `-----BEGIN USER NKEY SEED-----\n${new TextDecoder().decode(createUser().getSeed())}\n------END USER NKEY SEED------\n`,
      "packages/core/.cotal/auth/broker.secrets/system-signing.seed": seedText(),
      "packages/jobs/tmp-root/auth/broker.json": "{}", // a root by another name: its auth/ gives it away
      "apps/worker/alice.creds": "x",
      "apps/worker/op.nk": seedText(),
      "packages/cli/seeds/one": seedText(),
      "packages/cli/broker.secrets/x": "x",
      "packages/cli/.env": "SECRET=1",
      "node_modules/.pnpm/x/index.js": "x",
      "packages/cli/node_modules/dep/index.js": "x",
      "packages/cli/dist/bundle/cotal.js": "x",
      ".tools/nats-server": "x",
      ".git/config": "x",
      ".test-results/units/core.json": "{}",
      "docs/secret-notes.md": seedText(), // not a build input: default deny
    };
    for (const [rel, text] of Object.entries(planted)) plant(dir, rel, text);
    symlinkSync(join(dir, ".cotal"), join(dir, "packages", "root-link")); // a link is sent as a link, never its target
    const { taken } = imageFiles(dir);
    expect(taken.filter((f) => f in planted)).toEqual([]);
    expect(taken).toEqual(["package.json", "packages/cli/package.json", "packages/core/src/index.ts", "packages/root-link", "pnpm-lock.yaml"]);
    expect(secretFindings(dir, taken)).toEqual([]);
    // positive control: the scan sees a seed that slipped into a file the build does take
    plant(dir, "packages/core/src/leak.ts", `export const s = "${seedText()}";\n`);
    expect(secretFindings(dir, imageFiles(dir).taken)).toEqual([{ path: "packages/core/src/leak.ts", why: "holds an nkeys seed" }]);
  });

  it("without /.dockerignore the same tree ships the root: the ignore file is what keeps it out", () => {
    const dir = mkdtempSync(join(scratch, "bare-"));
    plant(dir, "package.json", "{}");
    plant(dir, ".cotal/auth/broker.secrets/operator.seed", seedText());
    plant(dir, "packages/cli/node_modules/dep/index.js", "x");
    const found = secretFindings(dir, imageFiles(dir).taken).map((f) => f.path);
    expect(found).toEqual([".cotal/auth/broker.secrets/operator.seed", "packages/cli/node_modules/dep/index.js"]);
  });

  it("the seed pattern matches every nkeys seed kind and no public key", () => {
    expect(NKEY_SEED.test(seedText())).toBe(true);
    expect(NKEY_SEED.test(new TextDecoder().decode(createUser().getSeed()))).toBe(true);
    expect(NKEY_SEED.test(createOperator().getPublicKey())).toBe(false);
    expect(NKEY_SEED.test(createAccount().getPublicKey())).toBe(false);
  });

  it("reads COPY forms: flags, --from another stage (not the context), JSON, continuations; refuses wildcards", () => {
    const copies = copyInstructions('FROM a AS b\nCOPY --chown=node:node packages/cli \\\n  apps /opt/\nCOPY --from=b /x /y\nADD ["README.md", "/r"]\nCOPY *.json /j\n');
    expect(copies.map(({ sources, dest, from }) => ({ sources, dest, from }))).toEqual([
      { sources: ["packages/cli", "apps"], dest: "/opt/", from: undefined },
      { sources: ["/x"], dest: "/y", from: "b" },
      { sources: ["README.md"], dest: "/r", from: undefined },
      { sources: ["*.json"], dest: "/j", from: undefined },
    ]);
    const context = ["README.md", "apps/w/main.ts", "packages/cli/a.ts", "packages/cli-old/b.ts"];
    expect(copiedFiles(copies[0]!, context)).toEqual(["apps/w/main.ts", "packages/cli/a.ts"]);
    expect(copiedFiles(copies[1]!, context)).toEqual([]);
    expect(() => copiedFiles(copies[3]!, context)).toThrow(/wildcard/);
  });
});
