/** `cotal node bundle` (docs/cluster.md "A node directory of its own"): the files a node's host keeps, no seed of the root, never over anything. */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { bundleNode } from "../src/ops/node-bundle.js";
import { nodeDirMarkerOf, nodeDirOf, readBundledMaterial } from "../src/root/node-dir.js";
import { leaseKeyFor } from "../src/verb/session.js";
import { RootLayout } from "../src/root/layout.js";
import { isCotalError } from "../src/errors.js";
import type { TempRoot } from "../src/testing/index.js";
import { threeHostRoot } from "./fixtures/cluster-root.js";

const roots: TempRoot[] = [];
const dirs: string[] = [];
afterEach(() => {
  roots.splice(0).forEach((r) => r.remove());
  dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true }));
});
const scratch = (): string => {
  const d = mkdtempSync(join(tmpdir(), "cotal-bundle-"));
  dirs.push(d);
  return d;
};
const codeOf = (fn: () => unknown): string => {
  try {
    fn();
  } catch (e) {
    if (isCotalError(e)) return e.code;
    throw e;
  }
  return "none";
};

describe("a node's own directory", () => {
  it("holds settings.json, the node's route files, the route password and its agent's users, 0600 in 0700, and no seed but the agent's user keys", async () => {
    const root = await threeHostRoot(roots);
    const out = join(scratch(), "n2");
    const r = bundleNode({ root: root.layout.root, node: "cm-n2", out });
    expect(r.host).toBe("10.99.0.2");
    expect(r.files.sort()).toEqual(["node.json", "nodes/cm-n2/agent/authority.creds", "nodes/cm-n2/agent/system.creds", "nodes/cm-n2/material.json", "routes/ca.pem", "routes/cm-n2-key.pem", "routes/cm-n2.pem", "routes/route-auth.json", "settings.json"]);
    expect(nodeDirOf(out)).toBe("cm-n2");
    // Its agent fences on the control root's writers' lease, not on a key of its own path.
    expect(leaseKeyFor(new RootLayout(out))).toBe(leaseKeyFor(root.layout));
    expect(nodeDirMarkerOf(out)).toMatchObject({ node: "cm-n2", cluster: "cm", host: "10.99.0.2", leaseKey: leaseKeyFor(root.layout) });
    expect(nodeDirOf(root.layout.root)).toBeUndefined();
    // The material of its day: the held boot of a node whose new cluster published none yet.
    expect(readBundledMaterial(new RootLayout(out), "cm-n2")?.cluster.name).toBe("cm");
    expect(readBundledMaterial(root.layout, "cm-n2")).toBeUndefined();
    expect(statSync(out).mode & 0o777).toBe(0o700);
    const inside = readdirSync(out, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name));
    expect(inside.length).toBe(r.files.length);
    for (const f of inside) {
      expect(statSync(f).mode & 0o777, f).toBe(0o600);
      expect(readFileSync(f, "latin1"), f).not.toMatch(/S[OANCX][A-Z2-7]{56}/);
    }
    expect(readFileSync(join(out, "settings.json"), "utf8")).toBe(readFileSync(root.layout.settingsFile, "utf8"));
    expect(existsSync(new RootLayout(out).authDir)).toBe(false); // no operator trust: not a root
    expect(readdirSync(join(out, "routes")).some((f) => f.startsWith("cm-n1") || f.startsWith("cm-n3"))).toBe(false); // another node's key stays out
    expect(r.next).toEqual([`cotal --root ${out} node run --node cm-n2   # on 10.99.0.2, once ${out} is copied there (the same path, 0700)`]);
  });

  it("refuses an unknown node, a non-empty or file --out, and an --out inside the root, writing nothing", async () => {
    const root = await threeHostRoot(roots);
    const base = scratch();
    expect(codeOf(() => bundleNode({ root: root.layout.root, node: "cm-n9", out: join(base, "x") }))).toBe("invalid-argument");
    expect(existsSync(join(base, "x"))).toBe(false);
    mkdirSync(join(base, "full"));
    writeFileSync(join(base, "full", "keep"), "mine");
    expect(codeOf(() => bundleNode({ root: root.layout.root, node: "cm-n2", out: join(base, "full") }))).toBe("invalid-argument");
    expect(readdirSync(join(base, "full"))).toEqual(["keep"]);
    writeFileSync(join(base, "file"), "mine");
    expect(codeOf(() => bundleNode({ root: root.layout.root, node: "cm-n2", out: join(base, "file") }))).toBe("invalid-argument");
    expect(codeOf(() => bundleNode({ root: root.layout.root, node: "cm-n2", out: join(root.layout.root, "n2") }))).toBe("invalid-argument");
    expect(existsSync(join(root.layout.root, "n2"))).toBe(false);
    mkdirSync(join(base, "empty"));
    expect(bundleNode({ root: root.layout.root, node: "cm-n2", out: join(base, "empty") }).node).toBe("cm-n2"); // an empty directory is taken
    expect(readdirSync(base).filter((f) => f.includes("cotal-bundle"))).toEqual([]); // no temporary left behind
  });
});
