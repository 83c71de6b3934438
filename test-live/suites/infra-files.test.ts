import { execFileSync, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { repoRoot } from "@cotal/harness";

// The shipped infra files, checked by the tools that will read them: systemd's own verifier for the
// unit, `docker compose config` (no engine needed) for the compose file. Absent tools skip, saying so.
const UNIT = join(repoRoot(), "infra", "systemd", "cotal-worker.service");
const COMPOSE = join(repoRoot(), "infra", "docker", "compose.yml");
const scratch = mkdtempSync(join(tmpdir(), "cotal-infra-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

function has(cmd: string, args: string[]): boolean {
  return spawnSync(cmd, args, { stdio: "ignore" }).status === 0;
}

/** Clean means exit 0 and not one line of complaint (unknown keys are only warnings to systemd). */
function verifyUnit(path: string): { clean: boolean; output: string } {
  const r = spawnSync("systemd-analyze", ["verify", path], { encoding: "utf8" });
  const output = `${r.stdout}${r.stderr}`.trim();
  return { clean: r.status === 0 && output === "", output };
}

/** A copy of the unit with one line changed, under the same file name (systemd keys on it). */
function mutantUnit(from: RegExp, to: string): string {
  const dir = mkdtempSync(join(scratch, "unit-"));
  const text = readFileSync(UNIT, "utf8");
  expect(text).toMatch(from);
  const path = join(dir, "cotal-worker.service");
  writeFileSync(path, text.replace(from, to));
  return path;
}

const systemd = has("systemd-analyze", ["--version"]);
const compose = has("docker", ["compose", "version"]) ? ["docker", "compose"] : has("docker-compose", ["version"]) ? ["docker-compose"] : undefined;
if (!systemd) console.log("[infra-files] skipped the unit check: systemd-analyze is not installed here");
if (!compose) console.log("[infra-files] skipped the compose check: neither `docker compose` nor docker-compose is installed here");

describe("shipped infra files", () => {
  it.skipIf(!systemd)("systemd-analyze verify: the worker and broker units are clean; a misspelt key or a missing binary is not", () => {
    const shipped = verifyUnit(UNIT);
    expect(shipped.output).toBe("");
    expect(shipped.clean).toBe(true);
    const broker = verifyUnit(join(repoRoot(), "infra", "systemd", "cotal-broker.service")); // the LimitNOFILE= unit (README "Broker limits")
    expect(broker.output).toBe("");
    // positive controls: the check sees what it is there for
    const misspelt = verifyUnit(mutantUnit(/^KillMode=mixed$/m, "KillMod=mixed"));
    expect(misspelt.clean).toBe(false);
    expect(misspelt.output).toMatch(/Unknown key 'KillMod'/);
    const missing = verifyUnit(mutantUnit(/^ExecStart=\/usr\/bin\/node /m, "ExecStart=/nonexistent/node "));
    expect(missing.clean).toBe(false);
    expect(missing.output).toMatch(/not executable/);
  });

  it.skipIf(!systemd)("systemd-analyze security: both units expose at most 4.0 (least privilege; the unhardened units were 8.7)", () => {
    for (const name of ["cotal-broker.service", "cotal-worker.service"]) {
      const r = spawnSync("systemd-analyze", ["security", "--offline=yes", "--threshold=40", join(repoRoot(), "infra", "systemd", name)], { encoding: "utf8" });
      expect(r.status, `${name}: ${r.stdout.split("\n").filter((l) => l.startsWith("→")).join("")}${r.stderr}`).toBe(0);
    }
    // positive control: the same unit without its hardening is over the threshold
    const bare = mutantUnit(/^CapabilityBoundingSet=[\s\S]*^SystemCallArchitectures=native$/m, "");
    expect(spawnSync("systemd-analyze", ["security", "--offline=yes", "--threshold=40", bare]).status).not.toBe(0);
  });

  it.skipIf(!has("systemd-sysusers", ["--version"]))("systemd-sysusers creates the cotal user from the shipped sysusers.d file (into a scratch root)", () => {
    const sysroot = mkdtempSync(join(scratch, "sysroot-"));
    mkdirSync(join(sysroot, "etc"));
    const r = spawnSync("systemd-sysusers", [`--root=${sysroot}`, join(repoRoot(), "infra", "systemd", "cotal.sysusers.conf")], { encoding: "utf8" });
    expect(r.status, r.stderr).toBe(0);
    expect(readFileSync(join(sysroot, "etc", "passwd"), "utf8")).toMatch(/^cotal:x:\d+:\d+:[^:]*:\/var\/lib\/cotal:\/usr\/sbin\/nologin$/m);
  });

  it.skipIf(!compose)("docker compose config: the compose file is valid; a broken one is refused", () => {
    const [cmd = "docker", ...pre] = compose ?? [];
    // `config --services` validates the whole file first and reads the same on Compose v2 and 1.29
    // (with the `metrics` profile on: v2 lists a profile's services only when it is).
    const services = execFileSync(cmd, [...pre, "-f", COMPOSE, "--profile", "metrics", "config", "--services"], { encoding: "utf8" });
    expect(services.trim().split("\n").sort()).toEqual(["dashboard", "nats", "prometheus", "redis", "worker"]);
    const broken = join(scratch, "compose.yml");
    writeFileSync(broken, readFileSync(COMPOSE, "utf8").replace("pid: \"service:nats\"", "pid: [\"service:nats\"]"));
    const refused = spawnSync(cmd, [...pre, "-f", broken, "config"], { encoding: "utf8" });
    expect(refused.status).not.toBe(0);
    expect(refused.stderr).toMatch(/pid/);
  });
});
