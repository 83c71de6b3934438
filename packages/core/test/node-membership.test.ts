/**
 * Joining and leaving a cluster root (docs/cluster.md "Joining: cotal node add", "Leaving: cotal node
 * forget"): the pure rules (names never given twice, ports taken per host, settings without a node,
 * proofs of members only) and the certificate `node add` signs with the root's CA.
 */
import { execFileSync } from "node:child_process";
import { readdirSync, statSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { clusterOf, newClusterSettings, nextNodeName, portsTakenOn } from "../src/root/cluster-settings.js";
import { addNodeCertificate, createRouteSecurity, routesDir } from "../src/root/route-security.js";
import { loadSettings } from "../src/root/settings.js";
import { RootLayout } from "../src/root/layout.js";
import { withoutNode } from "../src/ops/node-forget.js";
import { onlyMembers } from "../src/ops/boot-cluster.js";
import { finishedByUp } from "../src/ops/cluster-nodes.js";
import { CotalError, RERUN, rerunWith } from "../src/errors.js";
import { createTempRoot } from "../src/testing/index.js";
import { refusalOf } from "./fixtures/records.js";

const cluster = newClusterSettings("cm", [14001, 14002, 14003], [15001, 15002, 15003]);
const layout = new RootLayout("/r");

describe("the name node add gives", () => {
  it("is one past the highest n<k> in settings or under nodes/, so a forgotten node's name is never given again", () => {
    expect(nextNodeName(cluster)).toBe("cm-n4");
    expect(nextNodeName(cluster, ["cm-n1", "cm-n4", "cm-n2"])).toBe("cm-n5");
    const afterForget = { ...cluster, nodes: cluster.nodes.filter((n) => n.name !== "cm-n2") };
    expect(nextNodeName(afterForget, ["cm-n1", "cm-n2", "cm-n3"])).toBe("cm-n4");
    // Names of another shape, or of another cluster, take no number.
    expect(nextNodeName(cluster, ["other-n9", "cm-n7x", "store"])).toBe("cm-n4");
  });
});

describe("ports are taken per host", () => {
  it("two nodes on two hosts may both listen on 4222; two on one host may not", () => {
    const spread = { ...cluster, nodes: [...cluster.nodes, { name: "cm-n4", port: 14001, clusterPort: 15001, host: "10.0.0.4" }] };
    expect(clusterOf(layout, { host: "127.0.0.1", cluster: spread } as never)?.nodes).toHaveLength(4);
    const clash = { ...cluster, nodes: [...cluster.nodes, { name: "cm-n4", port: 14001, clusterPort: 15009 }] };
    expect(refusalOf(() => clusterOf(layout, { host: "127.0.0.1", cluster: clash } as never)).message).toContain("node cm-n4 has a missing or repeated port");
    // The same host named explicitly is the same host.
    const named = { ...cluster, nodes: [...cluster.nodes, { name: "cm-n4", port: 14002, clusterPort: 15009, host: "127.0.0.1" }] };
    expect(refusalOf(() => clusterOf(layout, { host: "127.0.0.1", cluster: named } as never)).code).toBe("corrupt-record");
    expect([...portsTakenOn(spread, "10.0.0.4", "127.0.0.1")].sort()).toEqual([14001, 15001]);
    expect([...portsTakenOn(spread, "127.0.0.1", "127.0.0.1")].sort()).toEqual([14001, 14002, 14003, 15001, 15002, 15003]);
  });
});

describe("settings without a forgotten node", () => {
  it("drop it, and its entry among the operator's route certificates; every other field stays", () => {
    const files = { source: "files" as const, caFile: "/etc/nats/ca.pem", nodes: Object.fromEntries(cluster.nodes.map((n) => [n.name, { certFile: `/etc/nats/${n.name}.pem`, keyFile: `/etc/nats/${n.name}.key` }])) };
    const withFiles = { ...cluster, routeTls: files, routeAuth: { user: "cotal-route" } };
    const settings = { format: "cotal.settings/1", host: "127.0.0.1", port: 14001, serverName: "cm", createdAt: "t", cluster: withFiles } as const;
    const out = withoutNode(settings, withFiles, "cm-n2");
    expect(out.cluster?.nodes.map((n) => n.name)).toEqual(["cm-n1", "cm-n3"]);
    expect(Object.keys((out.cluster?.routeTls as typeof files).nodes)).toEqual(["cm-n1", "cm-n3"]);
    expect(out.cluster?.routeAuth).toEqual({ user: "cotal-route" });
    expect(out.port).toBe(14001);
    const cotal = { ...cluster, routeTls: { source: "cotal" as const } };
    expect(withoutNode({ ...settings, cluster: cotal }, cotal, "cm-n3").cluster?.routeTls).toEqual({ source: "cotal" });
  });

  it("the record keeps the proofs of members only", () => {
    const p = { configDigest: "d", provenAt: "t", appliedGeneration: 4 };
    expect(onlyMembers({ a: p, b: p, gone: p }, ["a", "b"])).toEqual({ a: p, b: p });
  });
});

describe("the certificate node add signs", () => {
  const roots: { remove(): void }[] = [];
  afterEach(() => roots.splice(0).forEach((r) => r.remove()));

  it("is signed by the root's CA for the node's host, 0600 beside the others, with no staging left; a root without its CA refuses", async () => {
    const root = createTempRoot();
    roots.push(root);
    expect(loadSettings(root.layout)).toBeDefined();
    await createRouteSecurity(root.layout, cluster, () => "127.0.0.1");
    const files = await addNodeCertificate(root.layout, "cm-n4", "10.99.0.4");
    expect(execFileSync("openssl", ["verify", "-CAfile", files.caFile, files.certFile], { encoding: "utf8" })).toMatch(/OK/);
    const text = execFileSync("openssl", ["x509", "-in", files.certFile, "-noout", "-text"], { encoding: "utf8" });
    expect(text).toMatch(/Subject: CN\s*=\s*cm-n4/);
    expect(text).toMatch(/IP Address:10\.99\.0\.4/);
    expect(text).toMatch(/TLS Web Server Authentication, TLS Web Client Authentication/);
    const dir = routesDir(root.layout);
    expect(readdirSync(dir).filter((f) => f.startsWith("."))).toEqual([]);
    for (const f of [files.certFile, files.keyFile]) expect(statSync(f).mode & 0o777, f).toBe(0o600);
    // Another CA's key is never made up: without ca-key.pem nothing is signed.
    const other = createTempRoot();
    roots.push(other);
    const err = await addNodeCertificate(other.layout, "cm-n4", "10.99.0.4").catch((e: unknown) => e);
    expect((err as { code?: string }).code).toBe("corrupt-record");
    expect((err as Error).message).toContain("lacks the cluster's CA");
  });
});

describe("a refusal after node add or forget changed settings.json", () => {
  it("names the up that finishes the change instead of a re-run of the verb; a refusal with no re-run is kept as it is", () => {
    const err = new CotalError("cluster-unproven", "generation 5 is not proven on node cm-n4", { next: `cotal up && ${RERUN}   # …`, details: { behind: ["cm-n4"] } });
    const out = finishedByUp(err, "/srv/my root", "node cm-n4") as CotalError;
    expect(out.code).toBe("cluster-unproven");
    expect(out.next).toBe("cotal up && cotal --root '/srv/my root' up --detach   # …");
    expect(out.message).toContain("node cm-n4 is already in settings.json");
    expect(out.details).toEqual({ behind: ["cm-n4"] });
    const changed = finishedByUp(new CotalError("conflict", "x", { next: rerunWith({ "--port": null }) }), "/r", "node cm-n4") as CotalError;
    expect(changed.next).toBe("cotal --root /r up --detach");
    const plain = new CotalError("io", "disk full", { next: "df -h /r" });
    expect(finishedByUp(plain, "/r", "node cm-n4")).toBe(plain);
    const other = new Error("boom");
    expect(finishedByUp(other, "/r", "node cm-n4")).toBe(other);
  });
});
