import { stat, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import {
  ContainerBackend,
  ProcessBackend,
  cleanupTempRoots,
  containerizeConfig,
  cotalCliPath,
  forcedBackend,
  freePort,
  freePorts,
  harnessTeardown,
  isHarnessError,
  natsServerBinary,
  natsServerVersion,
  parseServerVersion,
  renderConfig,
  repoRoot,
  runCotal,
  selectBackend,
  tempRoot,
  versionAtLeast,
} from "../src/index.js";

afterAll(async () => {
  await harnessTeardown();
});

describe("ports", () => {
  it("freePort returns a port that can be bound", async () => {
    const port = await freePort();
    const srv = createServer();
    await new Promise<void>((resolve, reject) => {
      srv.once("error", reject);
      srv.listen(port, "127.0.0.1", () => resolve());
    });
    await new Promise((r) => srv.close(r));
  });

  it("freePorts returns distinct ports", async () => {
    const ports = await freePorts(8);
    expect(new Set(ports).size).toBe(8);
  });
});

describe("tempRoot", () => {
  it("makes a 0700 dir under tmpdir and cleanupTempRoots removes the ones left", async () => {
    const a = await tempRoot("harness-a-");
    const b = await tempRoot("harness-b-");
    expect((await stat(a.path)).mode & 0o777).toBe(0o700);
    await writeFile(join(b.path, "x"), "y");
    await a.cleanup();
    await a.cleanup(); // idempotent
    await expect(stat(a.path)).rejects.toMatchObject({ code: "ENOENT" });
    await cleanupTempRoots();
    await expect(stat(b.path)).rejects.toMatchObject({ code: "ENOENT" });
  });
});

describe("nats-server binary", () => {
  const saved = process.env.NATS_SERVER_BIN;
  afterEach(() => {
    if (saved === undefined) delete process.env.NATS_SERVER_BIN;
    else process.env.NATS_SERVER_BIN = saved;
  });

  it("finds the binary and reads its version", async () => {
    const bin = await natsServerBinary();
    const v = await natsServerVersion(bin);
    console.log(`nats-server ${bin} v${v.raw}`);
    expect(v.major).toBe(2);
    expect(versionAtLeast(v, "2.9.0")).toBe(true);
  });

  it("a wrong NATS_SERVER_BIN is the core's refusal naming the path, not a silent fallback", async () => {
    process.env.NATS_SERVER_BIN = "/nonexistent/nats-server";
    await expect(natsServerBinary()).rejects.toMatchObject({ code: "nats-server-missing", details: { path: "/nonexistent/nats-server" } });
  });

  it("parses and compares versions", () => {
    expect(parseServerVersion("nats-server: v2.9.10\n")).toEqual({ major: 2, minor: 9, patch: 10, raw: "2.9.10" });
    const beta = parseServerVersion("nats-server: v2.10.0-beta.1");
    expect(beta.prerelease).toBe("beta.1");
    const v = parseServerVersion("v2.9.10");
    expect(versionAtLeast(v, "2.9.10")).toBe(true);
    expect(versionAtLeast(v, "2.9.9")).toBe(true);
    expect(versionAtLeast(v, "2.10.0")).toBe(false);
    expect(versionAtLeast(v, "3.0.0")).toBe(false);
    expect(versionAtLeast(beta, "2.10.0")).toBe(false);
    expect(versionAtLeast(beta, "2.10.0-beta.1")).toBe(true);
    expect(versionAtLeast(parseServerVersion("2.11.1"), "2.10.0")).toBe(true);
    expect(() => parseServerVersion("nonsense")).toThrow();
  });
});

describe("config templates", () => {
  it("fills placeholders and refuses unknown ones", () => {
    const t = "listen: {{HOST}}:{{PORT}}\nhttp: {{HOST}}:{{ HTTP_PORT }}\njetstream { store_dir: \"{{STORE_DIR}}\" }\n";
    expect(renderConfig(t, { PORT: 1, HTTP_PORT: 2, STORE_DIR: "/s", HOST: "127.0.0.1" })).toBe("listen: 127.0.0.1:1\nhttp: 127.0.0.1:2\njetstream { store_dir: \"/s\" }\n");
    expect(() => renderConfig(t, { PORT: 1, STORE_DIR: "/s", HOST: "h" })).toThrow(/HTTP_PORT.*started without/);
    expect(() => renderConfig("x: {{WHAT}}", { PORT: 1, STORE_DIR: "/s", HOST: "h" })).toThrow(/WHAT/);
  });

  it("opens loopback listen addresses for the container", () => {
    expect(containerizeConfig("listen: 127.0.0.1:{{PORT}}\nhttp: localhost:{{HTTP_PORT}}\nx: 127.0.0.1:80\n")).toBe("listen: 0.0.0.0:{{PORT}}\nhttp: 0.0.0.0:{{HTTP_PORT}}\nx: 127.0.0.1:80\n");
  });
});

describe("backend selection", () => {
  const saved = process.env.COTAL_HARNESS_BACKEND;
  afterEach(() => {
    if (saved === undefined) delete process.env.COTAL_HARNESS_BACKEND;
    else process.env.COTAL_HARNESS_BACKEND = saved;
  });

  it("COTAL_HARNESS_BACKEND forces a backend and rejects nonsense", async () => {
    process.env.COTAL_HARNESS_BACKEND = "process";
    expect(forcedBackend()).toBe("process");
    expect(await selectBackend()).toBeInstanceOf(ProcessBackend);
    process.env.COTAL_HARNESS_BACKEND = "vm";
    expect(() => forcedBackend()).toThrow(/COTAL_HARNESS_BACKEND/);
    delete process.env.COTAL_HARNESS_BACKEND;
    expect(forcedBackend()).toBeUndefined();
  });

  it("without a forced choice, picks containers only when Docker answers", async () => {
    delete process.env.COTAL_HARNESS_BACKEND;
    const { dockerAvailable } = await import("../src/index.js");
    const docker = await dockerAvailable();
    const chosen = await selectBackend();
    expect(chosen).toBeInstanceOf(docker ? ContainerBackend : ProcessBackend);
    if (!docker) {
      process.env.COTAL_HARNESS_BACKEND = "container";
      await expect(selectBackend()).rejects.toSatisfy((e: unknown) => isHarnessError(e, "docker-unavailable"));
    }
  });
});

describe("runCotal", () => {
  const saved = process.env.COTAL_CLI;
  afterEach(() => {
    if (saved === undefined) delete process.env.COTAL_CLI;
    else process.env.COTAL_CLI = saved;
  });

  it("resolves the CLI inside this repo", () => {
    delete process.env.COTAL_CLI;
    expect(cotalCliPath()).toBe(join(repoRoot(), "packages", "cli", "dist", "bundle", "cotal.js"));
  });

  // The real CLI is not built yet; a stand-in proves the plumbing (args, COTAL_ROOT, env, stdin, exit code, timeout).
  it("runs COTAL_CLI with COTAL_ROOT, env and stdin, and reports a timeout", async () => {
    const root = await tempRoot("cli-");
    const stub = join(root.path, "stub.mjs");
    await writeFile(
      stub,
      `let input = "";
process.stdin.setEncoding("utf8").on("data", (s) => (input += s)).on("end", () => {
  if (process.argv[2] === "hang") { setTimeout(() => {}, 60000); return; }
  console.log(JSON.stringify({ args: process.argv.slice(2), root: process.env.COTAL_ROOT, extra: process.env.EXTRA, input }));
  console.error("to stderr");
  process.exit(7);
});
`,
    );
    process.env.COTAL_CLI = stub;
    const r = await runCotal(["space", "add", "alpha"], { root: root.path, env: { EXTRA: "1" }, input: "piped" });
    expect(r.code).toBe(7);
    expect(JSON.parse(r.stdout)).toEqual({ args: ["space", "add", "alpha"], root: root.path, extra: "1", input: "piped" });
    expect(r.stderr).toContain("to stderr");
    expect(r.timedOut).toBe(false);
    const hung = await runCotal(["hang"], { root: root.path, timeoutMs: 300 });
    expect(hung.timedOut).toBe(true);
    expect(hung.code).toBeNull();
    expect(hung.signal).toBe("SIGKILL");
  });
});
