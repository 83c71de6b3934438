import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { createServer, type Server } from "node:net";
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { freePort, repoRoot } from "@cotal/harness";

// infra/hosts.sh (docs/cluster.md "Hosts, simulated here"): a set of network namespaces brought up
// and down leaves nothing behind, its hosts reach each other's addresses, and no host reaches the
// machine's own loopback services. A prefix of its own, so it never meets a set another cell runs.
const SCRIPT = join(repoRoot(), "infra", "hosts.sh");
const PREFIX = "ctsthosts";
const env = { ...process.env, COTAL_HOSTS_PREFIX: PREFIX };
const isRoot = process.getuid?.() === 0 && spawnSync("ip", ["netns", "list"]).status === 0;
if (!isRoot) console.log("[hosts] skipped: needs root and `ip netns`");

function hosts(...args: string[]): { code: number | null; out: string; err: string } {
  const r = spawnSync("bash", [SCRIPT, ...args], { env, encoding: "utf8", timeout: 30_000 });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

/** The root namespace's links, addresses and routes, and every namespace: what `down` must restore. */
function snapshot(): string {
  const run = (args: string[]): string => spawnSync("ip", args, { encoding: "utf8" }).stdout;
  return [run(["-br", "link"]), run(["-br", "addr"]), run(["route"]), run(["netns", "list"])].join("\n---\n");
}

/** Can `host` open a TCP connection to addr:port (bash's /dev/tcp inside the namespace, 2 s)? */
function reaches(host: string, addr: string, port: number): boolean {
  const r = spawnSync("bash", [SCRIPT, "exec", host, "timeout", "2", "bash", "-c", `exec 3<>/dev/tcp/${addr}/${port}`], { env, encoding: "utf8" });
  return r.status === 0;
}

const children: ChildProcess[] = [];
const servers: Server[] = [];
afterAll(async () => {
  for (const c of children) c.kill("SIGKILL");
  for (const s of servers) await new Promise((r) => s.close(r));
  if (isRoot) hosts("down");
});

describe.skipIf(!isRoot)("simulated hosts (infra/hosts.sh)", () => {
  it("up then down leaves the root namespace as it was, both idempotent", () => {
    hosts("down");
    const before = snapshot();
    expect(hosts("up", "3").code).toBe(0);
    const again = hosts("up", "3");
    expect(again.code, again.err).toBe(0);
    expect(again.out.trim().split("\n")).toEqual([`${PREFIX}-h1 10.99.0.1`, `${PREFIX}-h2 10.99.0.2`, `${PREFIX}-h3 10.99.0.3`]);
    // Up: the namespaces exist, and the root namespace gained nothing but them (no link, address, route).
    const up = snapshot();
    expect(up).toContain(`${PREFIX}-h3`);
    expect(up.split("\n---\n").slice(0, 3)).toEqual(before.split("\n---\n").slice(0, 3));
    const inside = spawnSync("bash", [SCRIPT, "exec", "2", "ip", "-br", "addr"], { env, encoding: "utf8" }).stdout;
    expect(inside).toMatch(/^lo +UNKNOWN +127\.0\.0\.1\/8/m);
    expect(inside).toMatch(/^eth0\S* +UP +10\.99\.0\.2\/24/m);
    expect(hosts("down").code).toBe(0);
    expect(hosts("down").code).toBe(0);
    expect(snapshot()).toBe(before);
  });

  it("host 1 reaches host 2's address; no host reaches the root namespace's loopback services", async () => {
    expect(hosts("up", "2").code).toBe(0);
    const port = await freePort();
    // A listener on host 2's address, inside host 2.
    const srv = spawn("bash", [SCRIPT, "exec", "h2", process.execPath, "-e", `require("net").createServer((s) => s.end()).listen(${port}, "10.99.0.2", () => console.log("ready"))`], { env });
    children.push(srv);
    await new Promise<void>((res, rej) => {
      srv.stdout?.on("data", (b: Buffer) => b.toString().includes("ready") && res());
      srv.once("exit", (code) => rej(new Error(`listener in h2 exited ${code}`)));
    });
    expect(reaches("1", "10.99.0.2", port)).toBe(true);
    // A loopback service of the root namespace, and the same port on host 1's own loopback: not reached.
    const local = createServer((s) => s.end());
    servers.push(local);
    const lport = await freePort();
    await new Promise<void>((r) => local.listen(lport, "127.0.0.1", r));
    expect(reaches("1", "127.0.0.1", lport)).toBe(false);
    // Control: the same loopback service answers from the root namespace.
    expect(spawnSync("bash", ["-c", `exec 3<>/dev/tcp/127.0.0.1/${lport}`]).status).toBe(0);
    // Cut host 2's link: host 1 no longer reaches it (a partition), healed it does.
    expect(hosts("cut", "2").code).toBe(0);
    expect(reaches("1", "10.99.0.2", port)).toBe(false);
    expect(hosts("heal", "2").code).toBe(0);
    expect(reaches("1", "10.99.0.2", port)).toBe(true);
    expect(hosts("exec", "nine", "true").code).toBe(2);
  });

  it("each host has its own hostname; --hide gives one command an empty, read-only directory or file, and nothing else sees it", () => {
    expect(hosts("up", "2").code).toBe(0);
    const run = (...argv: string[]) => spawnSync("bash", [SCRIPT, "exec", ...argv], { env, encoding: "utf8" });
    expect(run("2", "hostname").stdout.trim()).toBe(`${PREFIX}-h2`);
    expect(run("1", "hostname").stdout.trim()).toBe(`${PREFIX}-h1`);
    expect(spawnSync("hostname", { encoding: "utf8" }).stdout.trim()).not.toMatch(new RegExp(`^${PREFIX}-`)); // the root namespace keeps its own
    const dir = mkdtempSync(join(tmpdir(), "cotal-hide-"));
    writeFileSync(join(dir, "log"), "another host's");
    const hidden = run("1", "--hide", dir, "bash", "-c", `ls -A ${dir}; touch ${dir}/x 2>/dev/null && echo wrote; true`);
    expect(hidden.status, hidden.stderr).toBe(0);
    expect(hidden.stdout).toBe("");
    // Control: without --hide the same host sees the file, and the hidden mount never reached the root namespace.
    expect(run("1", "ls", "-A", dir).stdout.trim()).toBe("log");
    expect(readdirSync(dir)).toEqual(["log"]);
    expect(run("1", "--hide", join(dir, "nosuch"), "true").status).toBe(2);
    // A file: empty and read-only for that command; the file itself is untouched.
    const file = join(dir, "log");
    const masked = run("1", "--hide", file, "bash", "-c", `wc -c < ${file}; echo x >> ${file} 2>/dev/null && echo wrote; true`);
    expect(masked.status, masked.stderr).toBe(0);
    expect(masked.stdout.trim()).toBe("0");
    expect(run("1", "cat", file).stdout).toBe("another host's");
    expect(readFileSync(file, "utf8")).toBe("another host's");
  });
});
