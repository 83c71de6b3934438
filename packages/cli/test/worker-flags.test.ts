import { beforeEach, describe, expect, it, vi } from "vitest";
import { workerConfig, type WorkerConfig, type WorkerServiceOptions } from "@cotal/jobs";
import { EXIT } from "../src/index.js";
import { nextOf, runCli as run, scratchRoot } from "./helpers/cli.js";

// `cotal worker --metrics-host` beside COTAL_WORKER_METRICS_HOST (issue #32): the worker service is
// replaced by a recorder, so these cells show what the flag hands the worker without Redis or a broker.
const started = vi.hoisted(() => [] as unknown[]);
vi.mock("@cotal/jobs", async (importOriginal) => ({
  ...(await importOriginal<typeof import("@cotal/jobs")>()),
  runWorkerService: async (opts: unknown) => (started.push(opts), 0),
}));

const dir = scratchRoot("cotal-worker-flags-");
beforeEach(() => {
  started.length = 0;
  vi.stubEnv("COTAL_WORKER_METRICS_PORT", "");
  vi.stubEnv("COTAL_WORKER_METRICS_HOST", "");
});

/** What the worker would listen on, from the options the CLI handed it and the environment it read. */
const listenOf = (opts: unknown): WorkerConfig["http"] => {
  const o = opts as WorkerServiceOptions;
  return workerConfig(o.root, o.overrides ?? {}, o.env).http;
};

describe("cotal worker --metrics-host", () => {
  it("binds the given host with the given port, beating $COTAL_WORKER_METRICS_HOST", async () => {
    vi.stubEnv("COTAL_WORKER_METRICS_HOST", "127.0.0.2");
    const r = await run(["--root", dir, "worker", "--metrics-port", "9464", "--metrics-host", "0.0.0.0"]);
    expect(r.code, r.stderr).toBe(EXIT.ok);
    expect(started).toHaveLength(1);
    expect(listenOf(started[0])).toEqual({ host: "0.0.0.0", port: 9464 });
  });

  it("takes its port from $COTAL_WORKER_METRICS_PORT when no --metrics-port is given", async () => {
    vi.stubEnv("COTAL_WORKER_METRICS_PORT", "9470");
    const r = await run(["--root", dir, "worker", "--metrics-host", "::"]);
    expect(r.code, r.stderr).toBe(EXIT.ok);
    expect(listenOf(started[0])).toEqual({ host: "::", port: 9470 });
  });

  it("without the flag the host stays loopback", async () => {
    const r = await run(["--root", dir, "worker", "--metrics-port", "0"]);
    expect(r.code, r.stderr).toBe(EXIT.ok);
    expect(listenOf(started[0])).toEqual({ host: "127.0.0.1", port: 0 });
  });

  it.each([["http://0.0.0.0"], ["0.0.0.0 "], ["a b"], [""]])("%j is refused with exit 2 before the worker starts, and the printed next runs", async (host) => {
    const r = await run(["--root", dir, "worker", "--concurrency", "5", "--metrics-port", "9464", "--metrics-host", host]);
    expect(r.code).toBe(EXIT.usage);
    expect(r.stderr).toMatch(/--metrics-host takes an address to listen on/);
    expect(started).toHaveLength(0);
    const next = nextOf(r.stderr);
    expect(next).toMatch(new RegExp(`^cotal --root ${dir} worker --concurrency 5 --metrics-port 9464 --metrics-host 127\\.0\\.0\\.1 `));
    const [word, ...args] = (next.split("#")[0] ?? "").trim().split(" ");
    expect(word).toBe("cotal");
    const again = await run(args);
    expect(again.code, again.stderr).toBe(EXIT.ok);
    expect(listenOf(started[0])).toEqual({ host: "127.0.0.1", port: 9464 });
  });

  it("a host with no port from the flag or the environment is refused (it would serve nothing), naming --metrics-port", async () => {
    const r = await run(["--root", dir, "worker", "--metrics-host", "0.0.0.0"]);
    expect(r.code).toBe(EXIT.usage);
    expect(r.stderr).toMatch(/serves nothing without a port/);
    expect(started).toHaveLength(0);
    expect(nextOf(r.stderr)).toBe(`cotal --root ${dir} worker --metrics-host 0.0.0.0 --metrics-port 9464`);
  });
});
