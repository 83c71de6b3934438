import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { createServer as createHttpServer, type Server as HttpServer } from "node:http";
import { createServer as createTcpServer, type AddressInfo, type Server as TcpServer } from "node:net";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { isValidSpaceName } from "@cotal/core/light";
import { NKEY_SEED } from "../src/build-context.js";
import { repoRoot } from "../src/cotal-process.js";
import { parseUnitFile, unitEnvironment, unitExecStart, unitList, unitValue, unitValues } from "../src/unit-file.js";

// The shipped compose file, Dockerfile and systemd units, read by a YAML parser and a unit-file reader
// and checked for what an operator deploying them expects (issue #32): every service healthy-checked,
// metrics reachable on the compose network, the tenants file mounted, the root a volume, no secret baked
// in; units ordered, run as `cotal` in their state directory, with least privilege.
const REPO = repoRoot();
const DOCKER = join(REPO, "infra", "docker");
const SYSTEMD = join(REPO, "infra", "systemd");

interface Service {
  build?: { context: string; dockerfile: string };
  image?: string;
  profiles?: string[];
  command?: string[];
  entrypoint?: string[];
  ports?: string[];
  expose?: string[];
  volumes?: string[];
  environment?: Record<string, string>;
  network_mode?: string;
  init?: boolean;
  pid?: string;
  depends_on?: string[] | Record<string, { condition: string }>;
  healthcheck?: { test: string[]; interval?: string; timeout?: string; retries?: number };
}
const composeText = readFileSync(join(DOCKER, "compose.yml"), "utf8");
const compose = parse(composeText) as { services: Record<string, Service>; volumes: Record<string, unknown> } & Record<string, unknown>;
const svc = (name: string): Service => compose.services[name] as Service;
const dockerfile = readFileSync(join(DOCKER, "Dockerfile"), "utf8");
const ROOT = /^ENV COTAL_ROOT=(\S+)$/m.exec(dockerfile)?.[1];

/** Every string value of a parsed YAML document, with its path. */
function strings(value: unknown, path = ""): [string, string][] {
  if (typeof value === "string") return [[path, value]];
  if (Array.isArray(value)) return value.flatMap((v, i) => strings(v, `${path}[${i}]`));
  if (value && typeof value === "object") return Object.entries(value).flatMap(([k, v]) => [[`${path}.${k}#key`, k] as [string, string], ...strings(v, `${path}.${k}`)]);
  return [];
}

/** Runs a healthcheck's `node -e` script with its port moved to a test server's (in this process: not blocking it); its exit code. */
function runProbe(test: string[], from: number, to: number): Promise<number | null> {
  expect(test.slice(0, 3)).toEqual(["CMD", "node", "-e"]);
  const child = spawn(process.execPath, ["-e", (test[3] as string).replaceAll(String(from), String(to))], { stdio: "ignore", timeout: 10_000 });
  return new Promise((r) => child.once("exit", (code) => r(code)));
}

async function listening<S extends HttpServer | TcpServer>(server: S): Promise<{ server: S; port: number }> {
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  return { server, port: (server.address() as AddressInfo).port };
}
const closed = (s: HttpServer | TcpServer): Promise<void> => new Promise((r) => s.close(() => r()));

describe("infra/docker/compose.yml", () => {
  it("broker, redis, worker and dashboard (and Prometheus behind a profile), each with a healthcheck the engine runs in the container", () => {
    const always = Object.entries(compose.services).filter(([, s]) => s.profiles === undefined).map(([name]) => name);
    expect(always.sort()).toEqual(["dashboard", "nats", "redis", "worker"]);
    expect(Object.keys(compose.services).sort()).toEqual(["dashboard", "nats", "prometheus", "redis", "worker"]);
    for (const [name, s] of Object.entries(compose.services)) {
      expect(s.healthcheck?.test?.[0], name).toBe("CMD");
      expect(s.healthcheck?.retries, name).toBeGreaterThan(0);
    }
    // the worker and dashboard start once the broker and Redis answer
    for (const name of ["worker", "dashboard"]) expect(svc(name).depends_on).toEqual({ nats: { condition: "service_healthy" }, redis: { condition: "service_healthy" } });
  });

  it("worker and dashboard share the broker's network and pid namespaces; metrics bind 0.0.0.0, scraped at nats:<port>", () => {
    for (const name of ["worker", "dashboard"]) expect([svc(name).network_mode, svc(name).pid]).toEqual(["service:nats", "service:nats"]);
    expect(svc("nats").init).toBe(true); // an init reaps the shared namespace's orphans and hands SIGTERM to `up`
    const env = svc("worker").environment ?? {};
    expect(env.COTAL_WORKER_METRICS_HOST).toBe("0.0.0.0");
    const port = env.COTAL_WORKER_METRICS_PORT as string;
    expect(svc("nats").expose).toContain(port);
    expect(svc("worker").healthcheck?.test.join(" ")).toContain(`http://127.0.0.1:${port}/healthz`);
    const dash = svc("dashboard").command ?? [];
    const dashPort = dash[dash.indexOf("--port") + 1] as string;
    expect(svc("dashboard").healthcheck?.test.join(" ")).toContain(`http://127.0.0.1:${dashPort}/`);
    // published: the client port, and the dashboard (no login) on the host's loopback only
    expect(svc("nats").ports).toEqual(["4222:4222", `127.0.0.1:${dashPort}:${dashPort}`]);
    for (const name of ["redis", "worker", "dashboard"]) expect(svc(name).ports, name).toBeUndefined();
  });

  it("the root is the cotal-root volume at the image's COTAL_ROOT; the dashboard mounts it read-only", () => {
    expect(ROOT).toBe("/var/lib/cotal");
    expect(dockerfile).toMatch(new RegExp(`^VOLUME \\["${ROOT}"\\]$`, "m"));
    expect(Object.keys(compose.volumes).sort()).toEqual(["cotal-root", "prometheus-data", "redis-data"]);
    expect(svc("nats").volumes).toContain(`cotal-root:${ROOT}`);
    expect(svc("worker").volumes).toEqual([`cotal-root:${ROOT}`]);
    expect(svc("dashboard").volumes).toEqual([`cotal-root:${ROOT}:ro`]);
  });

  it("the tenants file the example adds from is mounted, exists beside the compose file and holds valid names", () => {
    const mount = (svc("nats").volumes ?? []).find((v) => v.endsWith(":/etc/cotal/tenants.txt:ro"));
    expect(mount).toBeDefined();
    const host = resolve(DOCKER, (mount as string).split(":")[0] as string);
    expect(existsSync(host)).toBe(true);
    const names = readFileSync(host, "utf8").split("\n").map((l) => l.trim()).filter((l) => l !== "" && !l.startsWith("#"));
    expect(names.length).toBeGreaterThan(0);
    for (const n of names) expect(isValidSpaceName(n), n).toBe(true);
    expect(composeText).toMatch(/exec nats node packages\/cli\/dist\/bundle\/cotal\.js space add --from \/etc\/cotal\/tenants\.txt --queue/);
  });

  it("no secret baked in: no seed, no secret-named setting, no secrets or configs block, no host root mounted", () => {
    for (const [path, text] of strings(compose)) {
      expect(NKEY_SEED.test(text), path).toBe(false);
      if (path.includes(".environment.") && path.endsWith("#key")) expect(text, path).not.toMatch(/SEED|SECRET|PASSW|TOKEN|CREDS|NKEY|_KEY$/i);
    }
    expect(compose.secrets).toBeUndefined();
    expect(compose.configs).toBeUndefined();
    const binds = Object.values(compose.services).flatMap((s) => (s.volumes ?? []).filter((v) => /^[./~]/.test(v)).map((v) => v.split(":")[0] as string));
    expect(binds.sort()).toEqual(["../prometheus/cotal-alerts.yml", "../redis/redis.conf", "./prometheus.yml", "./tenants.example.txt"]);
    expect(NKEY_SEED.test(readFileSync(join(DOCKER, "prometheus.yml"), "utf8"))).toBe(false);
    // the image: no secret-named ENV/ARG, no seed, runs unprivileged
    expect(dockerfile).not.toMatch(/^(ENV|ARG)\s+\S*(SEED|SECRET|PASSW|TOKEN|CREDS)/im);
    expect(NKEY_SEED.test(dockerfile)).toBe(false);
    expect([...dockerfile.matchAll(/^USER\s+(\S+)/gm)].at(-1)?.[1]).toBe("node");
  });

  it("the broker probe passes on nats-server's INFO line and fails on a closed port", async () => {
    const test = svc("nats").healthcheck?.test as string[];
    const { server, port } = await listening(createTcpServer((s) => s.end('INFO {"server_id":"x"}\r\n')));
    try {
      expect(await runProbe(test, 4222, port)).toBe(0);
    } finally {
      await closed(server);
    }
    expect(await runProbe(test, 4222, port)).toBe(1);
  });

  it("the worker and dashboard probes pass on 200 and fail on 503 or a closed port", async () => {
    let status = 200;
    const { server, port } = await listening(createHttpServer((_req, res) => res.writeHead(status).end("x")));
    const dash = svc("dashboard").command ?? [];
    const probes: [string[], number][] = [
      [svc("worker").healthcheck?.test as string[], Number(svc("worker").environment?.COTAL_WORKER_METRICS_PORT)],
      [svc("dashboard").healthcheck?.test as string[], Number(dash[dash.indexOf("--port") + 1])],
    ];
    try {
      for (const [test, from] of probes) expect(await runProbe(test, from, port)).toBe(0);
      status = 503;
      for (const [test, from] of probes) expect(await runProbe(test, from, port)).toBe(1);
    } finally {
      await closed(server);
    }
    for (const [test, from] of probes) expect(await runProbe(test, from, port)).toBe(1);
  });
});

describe("infra/docker/compose.yml: the optional Prometheus (profile metrics)", () => {
  const prom = svc("prometheus");
  /** A bind mount's host file (relative to the compose file) by the path it has in the container. */
  const mounted = (inContainer: string): string | undefined => {
    const v = (prom.volumes ?? []).find((m) => m.split(":")[1] === inContainer);
    return v === undefined ? undefined : resolve(DOCKER, v.split(":")[0] as string);
  };
  const configPath = mounted("/etc/prometheus/prometheus.yml");
  const config = parse(readFileSync(configPath ?? join(DOCKER, "prometheus.yml"), "utf8")) as {
    rule_files?: string[];
    scrape_configs: { job_name: string; metrics_path?: string; static_configs: { targets: string[] }[] }[];
  };

  it("runs only under `--profile metrics`, from the official image pinned by version, its UI on the host's loopback only", () => {
    expect(prom.profiles).toEqual(["metrics"]);
    expect(prom.image).toMatch(/^prom\/prometheus:v\d+\.\d+\.\d+$/);
    expect(prom.build).toBeUndefined();
    expect((prom.ports ?? []).every((p) => p.startsWith("127.0.0.1:"))).toBe(true);
    expect(prom.volumes).toContain("prometheus-data:/prometheus");
    // read-only mounts: Prometheus never writes cotal's files
    for (const v of (prom.volumes ?? []).filter((m) => /^[./]/.test(m))) expect(v, v).toMatch(/:ro$/);
    expect(prom.healthcheck?.test.join(" ")).toContain("http://127.0.0.1:9090/-/ready");
  });

  it("its config is the mounted prometheus.yml; every scrape target is a service of this file on a port it exposes where the worker's /metrics listens", () => {
    expect(configPath).toBe(join(DOCKER, "prometheus.yml"));
    const targets = config.scrape_configs.flatMap((c) => c.static_configs.flatMap((sc) => sc.targets));
    expect(targets.length).toBeGreaterThan(0);
    for (const t of targets) {
      const [host, port] = t.split(":") as [string, string];
      expect(Object.keys(compose.services), t).toContain(host);
      expect([...(svc(host).expose ?? []), ...(svc(host).ports ?? []).map((p) => p.split(":").at(-1) as string)], t).toContain(port);
      // the worker listens in that service's network namespace, on that port, on every interface
      const workers = Object.entries(compose.services).filter(([, s]) => s.network_mode === `service:${host}` && s.environment?.COTAL_WORKER_METRICS_PORT === port);
      expect(workers.map(([name]) => name), t).toEqual(["worker"]);
      expect(svc("worker").environment?.COTAL_WORKER_METRICS_HOST).toBe("0.0.0.0");
    }
    for (const c of config.scrape_configs) expect(c.metrics_path ?? "/metrics").toBe("/metrics");
    // one exporter per root: `cotal metrics` beside the worker would count the root series twice (docs/metrics.md)
    expect(targets).toHaveLength(1);
  });

  it("loads the example alert rules (infra/prometheus/cotal-alerts.yml), mounted where rule_files names them", () => {
    const alerts = join(REPO, "infra", "prometheus", "cotal-alerts.yml");
    expect(existsSync(alerts)).toBe(true);
    const rules = config.rule_files ?? [];
    expect(rules.length).toBeGreaterThan(0);
    for (const r of rules) expect(mounted(r), r).toBe(alerts);
    expect(prom.depends_on).toEqual({ worker: { condition: "service_healthy" } });
  });
});

describe("infra/systemd units", () => {
  const broker = parseUnitFile(readFileSync(join(SYSTEMD, "cotal-broker.service"), "utf8"));
  const worker = parseUnitFile(readFileSync(join(SYSTEMD, "cotal-worker.service"), "utf8"));

  it("the worker is ordered after the broker and Redis and pulls both in", () => {
    for (const key of ["After", "Wants"]) {
      expect(unitList(worker, "Unit", key)).toEqual(expect.arrayContaining(["cotal-broker.service", "redis-server.service", "network-online.target"]));
    }
    expect(unitList(broker, "Unit", "After")).toContain("network-online.target");
    expect(unitList(broker, "Unit", "Wants")).toContain("network-online.target");
  });

  it("both run as cotal in the state directory systemd makes, which is the root ExecStart and COTAL_ROOT name", () => {
    for (const unit of [broker, worker]) {
      expect(unitValue(unit, "Service", "User")).toBe("cotal");
      expect(unitValue(unit, "Service", "StateDirectory")).toBe("cotal");
      expect(unitValue(unit, "Service", "StateDirectoryMode")).toBe("0700");
      expect(unitEnvironment(unit).COTAL_ROOT).toBe("/var/lib/cotal");
      expect(unitValues(unit, "Service", "ReadWritePaths")).toEqual([]); // StateDirectory= is the one writable place
    }
    expect(unitExecStart(broker).slice(-3)).toEqual(["up", "--root", "/var/lib/cotal"]);
    expect(unitValue(broker, "Service", "Restart")).toBe("on-failure");
  });

  it("the sysusers.d file creates that user, its home the root", () => {
    const lines = readFileSync(join(SYSTEMD, "cotal.sysusers.conf"), "utf8").split("\n").filter((l) => /^\s*u\s/.test(l));
    expect(lines).toHaveLength(1);
    const m = /^u\s+(\S+)\s+(\S+)\s+"[^"]*"\s+(\S+)\s+(\S+)$/.exec((lines[0] as string).trim());
    expect(m?.slice(1)).toEqual(["cotal", "-", "/var/lib/cotal", "/usr/sbin/nologin"]);
  });

  it("least privilege: no capability, no new privilege, a read-only system, private /tmp and devices", () => {
    for (const unit of [broker, worker]) {
      expect(unit.get("Service")?.has("CapabilityBoundingSet")).toBe(true);
      expect(unitValues(unit, "Service", "CapabilityBoundingSet")).toEqual([]);
      for (const [key, value] of [["NoNewPrivileges", "yes"], ["ProtectSystem", "strict"], ["ProtectHome", "yes"], ["PrivateTmp", "yes"], ["PrivateDevices", "yes"], ["RestrictSUIDSGID", "yes"], ["UMask", "0077"]]) {
        expect(unitValue(unit, "Service", key as string), key).toBe(value);
      }
      expect(unitList(unit, "Service", "RestrictAddressFamilies").sort()).toEqual(["AF_INET", "AF_INET6", "AF_NETLINK", "AF_UNIX"]);
    }
  });
});
