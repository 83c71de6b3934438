import { readFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { materialHeld, materialSpaces, nodeLocalOf, nodeMaterial, renderNodeFrom, type NodeMaterial } from "../src/broker/node-material.js";
import { renderNode } from "../src/broker/render-root.js";
import { isHeldJwt } from "../src/broker/node-hold.js";
import { routeAuthFile } from "../src/root/route-security.js";
import { loadSpaceAccount, saveSpaceAccount, toAccountRecord } from "../src/root/account-store.js";
import { createAccountTrust } from "../src/trust/account.js";
import { loadBrokerTrust } from "../src/root/broker-store.js";
import { decodeJwt } from "../src/trust/index.js";
import type { TempRoot } from "../src/testing/index.js";
import { threeHostRoot } from "./fixtures/cluster-root.js";
import { GUARDS_ON } from "../src/guards.js";
import type { AccountRecord } from "../src/root/records.js";

// docs/cluster.md "Real hosts: the design of what remains", step 3: what a node's config is rendered
// from is public material, a value that travels (JSON) to the node's host; the route password and
// every seed stay behind, and the render from it is the render a writer applies.

const roots: TempRoot[] = [];
afterEach(() => roots.splice(0).forEach((r) => r.remove()));
const clusterRoot = (): Promise<TempRoot> => threeHostRoot(roots);

const SEED = /S[OAUNCX][A-Z2-7]{56}/;

describe("a cluster node's material", () => {
  it("holds no seed and no route password, and every tenant with its held twin", async () => {
    const root = await clusterRoot();
    const json = JSON.stringify(nodeMaterial(root.layout));
    expect(SEED.test(readFileSync(root.layout.accountFile(root.firstSpace), "utf8"))).toBe(true); // the scan's control: the root's own record has one
    expect(json).not.toMatch(SEED);
    const password = (JSON.parse(readFileSync(routeAuthFile(root.layout), "utf8")) as { password: string }).password;
    expect(json).not.toContain(password);
    const m = JSON.parse(json) as NodeMaterial;
    expect(m.spaces.map((s) => s.name)).toEqual([root.firstSpace]);
    const [space] = m.spaces;
    expect(isHeldJwt(decodeJwt(space?.heldJwt ?? ""))).toBe(true);
    expect(isHeldJwt(decodeJwt(space?.jwt ?? ""))).toBe(false);
    expect(m.cluster.nodes.map((n) => n.host)).toEqual(["10.99.0.1", "10.99.0.2", "10.99.0.3"]);
  });

  it("renders, after a trip through JSON, exactly the bytes renderNode writes: a list, and the held boot", async () => {
    const root = await clusterRoot();
    const broker = loadBrokerTrust(root.layout);
    const beta = createAccountTrust(broker.operator, "beta", { kind: "space" });
    saveSpaceAccount(root.layout, toAccountRecord(beta));
    const m = JSON.parse(JSON.stringify(nodeMaterial(root.layout))) as NodeMaterial;
    const records = [root.firstSpace, "beta"].map((n) => loadSpaceAccount(root.layout, n) as AccountRecord);
    for (const node of ["cm-n1", "cm-n2", "cm-n3"]) {
      const local = nodeLocalOf(root.layout, node);
      expect(renderNodeFrom(m, node, materialSpaces(m, [root.firstSpace, "beta"]), local).text).toBe(renderNode(root.layout, node, records).text);
      expect(renderNodeFrom(m, node, { held: materialHeld(m) }, local).text).toBe(renderNode(root.layout, node, [], { maintenance: true }).text);
    }
    expect(renderNodeFrom(m, "cm-n2", { held: materialHeld(m) }, nodeLocalOf(root.layout, "cm-n2")).text).toMatch(/# space beta/); // control
    expect(renderNodeFrom(m, "cm-n2", { held: materialHeld(m) }, nodeLocalOf(root.layout, "cm-n2"), { ...GUARDS_ON, CLUSTER_BOOT_BARE: true }).text).not.toMatch(/# space /);
  });

  it("refuses a tenant it has no record for, and a node the cluster does not name", async () => {
    const root = await clusterRoot();
    const m = nodeMaterial(root.layout);
    expect(() => materialSpaces(m, ["nosuch"])).toThrow(/space nosuch is listed but the node material has no account record/);
    expect(() => renderNodeFrom(m, "cm-n9", [], nodeLocalOf(root.layout, "cm-n1"))).toThrow(/names no node cm-n9/);
  });
});
