import { afterEach, describe, expect, it } from "vitest";
import { MATERIAL_BASE_KEY, MATERIAL_INDEX_KEY, MaterialReader, materialSpaceKey, publishMaterial, publishPlan, type MaterialKv } from "../src/broker/material-bucket.js";
import { materialSource, materialSpaces, nodeLocalOf, renderNodeFrom, type MaterialSource, type NodeBase } from "../src/broker/node-material.js";
import { renderNode } from "../src/broker/render-root.js";
import { loadSpaceAccount, saveSpaceAccount, toAccountRecord } from "../src/root/account-store.js";
import { loadBrokerTrust } from "../src/root/broker-store.js";
import { createAccountTrust } from "../src/trust/account.js";
import type { AccountRecord } from "../src/root/records.js";
import type { TempRoot } from "../src/testing/index.js";
import { isCotalError } from "../src/errors.js";
import { threeHostRoot } from "./fixtures/cluster-root.js";

// docs/cluster.md "The public bucket": a key for the base, one per tenant, an index of digests
// written last; an agent's reader fetches only the keys whose digest moved.

const roots: TempRoot[] = [];
afterEach(() => roots.splice(0).forEach((r) => r.remove()));

/** A bucket in a Map, recording every write in order. */
function memoryKv(): MaterialKv & { map: Map<string, Uint8Array>; writes: string[]; failPut?: string } {
  const map = new Map<string, Uint8Array>();
  const kv = {
    map,
    writes: [] as string[],
    failPut: undefined as string | undefined,
    get: (key: string) => Promise.resolve(map.get(key)),
    put: (key: string, value: Uint8Array) => {
      if (key === kv.failPut) return Promise.reject(new Error("no answer"));
      kv.writes.push(`put ${key}`);
      map.set(key, value);
      return Promise.resolve();
    },
    delete: (key: string) => {
      kv.writes.push(`delete ${key}`);
      map.delete(key);
      return Promise.resolve();
    },
  };
  return kv;
}

const base = (operator = "OP1"): NodeBase => ({
  format: "cotal.node-material/1",
  operator: { publicKey: operator, jwt: "op.jwt" },
  system: { publicKey: "AS", jwt: "sys.jwt" },
  authority: { name: "authority", publicKey: "AA", jwt: "auth.jwt" },
  cluster: { name: "c", nodes: [{ name: "c-n1", host: "127.0.0.1", port: 1, clusterPort: 2 }] },
  maxPayload: 1048576,
  syncAlways: false,
});
const space = (name: string, jwt = `${name}.jwt`) => ({ name, publicKey: `A${name.toUpperCase()}`, jwt });

function source(b: NodeBase, spaces: ReturnType<typeof space>[], signed: string[] = []): MaterialSource {
  return { base: b, spaces, held: (jwt) => (signed.push(jwt), `held(${jwt})`) };
}

describe("publishPlan (pure)", () => {
  it("writes everything into an empty bucket, nothing when nothing moved, and only what moved after", () => {
    const first = publishPlan(undefined, base(), [space("alpha"), space("beta")]);
    expect(first).toMatchObject({ base: true, spaces: ["alpha", "beta"], deletes: [] });
    expect(publishPlan(first.index, base(), [space("alpha"), space("beta")])).toMatchObject({ base: false, spaces: [], deletes: [] });
    expect(publishPlan(first.index, base(), [space("alpha", "alpha.v2"), space("beta")])).toMatchObject({ base: false, spaces: ["alpha"], deletes: [] });
    expect(publishPlan(first.index, base(), [space("beta"), space("gamma")])).toMatchObject({ base: false, spaces: ["gamma"], deletes: ["alpha"] });
  });

  it("rewrites every tenant when the operator changes (each held twin is the operator's signature)", () => {
    const first = publishPlan(undefined, base("OP1"), [space("alpha"), space("beta")]);
    expect(publishPlan(first.index, base("OP2"), [space("alpha"), space("beta")])).toMatchObject({ base: true, spaces: ["alpha", "beta"] });
  });
});

describe("publishMaterial and MaterialReader", () => {
  it("writes the index last, signs held twins only for keys that change, and a reader fetches only what moved", async () => {
    const kv = memoryKv();
    const signed: string[] = [];
    await publishMaterial(kv, source(base(), [space("alpha"), space("beta")], signed));
    expect(kv.writes).toEqual(["put base", "put space.alpha", "put space.beta", "put index"]);
    const reader = new MaterialReader();
    const m = await reader.read(kv);
    expect(m?.spaces).toEqual([
      { name: "alpha", publicKey: "AALPHA", jwt: "alpha.jwt", heldJwt: "held(alpha.jwt)" },
      { name: "beta", publicKey: "ABETA", jwt: "beta.jwt", heldJwt: "held(beta.jwt)" },
    ]);
    expect(reader.fetched).toBe(3);

    kv.writes.length = 0;
    signed.length = 0;
    await publishMaterial(kv, source(base(), [space("alpha"), space("beta")], signed));
    expect(kv.writes).toEqual([]);
    expect(signed).toEqual([]);
    await reader.read(kv);
    expect(reader.fetched).toBe(3);

    await publishMaterial(kv, source(base(), [space("beta", "beta.v2"), space("gamma")], signed));
    expect(kv.writes).toEqual(["put space.beta", "put space.gamma", "delete space.alpha", "put index"]);
    expect(signed).toEqual(["beta.v2", "gamma.jwt"]);
    const after = await reader.read(kv);
    expect(reader.fetched).toBe(5);
    expect(after?.spaces.map((s) => `${s.name}:${s.jwt}`)).toEqual(["beta:beta.v2", "gamma:gamma.jwt"]);
  });

  it("a publish cut short leaves the old index, and the next publish writes what it missed", async () => {
    const kv = memoryKv();
    await publishMaterial(kv, source(base(), [space("alpha")]));
    kv.failPut = materialSpaceKey("beta");
    await expect(publishMaterial(kv, source(base(), [space("alpha"), space("beta")]))).rejects.toThrow(/no answer/);
    const stale = await new MaterialReader().read(kv);
    expect(stale?.spaces.map((s) => s.name)).toEqual(["alpha"]);
    kv.failPut = undefined;
    const plan = await publishMaterial(kv, source(base(), [space("alpha"), space("beta")]));
    expect(plan.spaces).toEqual(["beta"]);
    expect((await new MaterialReader().read(kv))?.spaces.map((s) => s.name)).toEqual(["alpha", "beta"]);
  });

  it("reads nothing from an empty bucket, and refuses (inventory-corrupt) values it cannot use", async () => {
    const kv = memoryKv();
    expect(await new MaterialReader().read(kv)).toBeUndefined();
    await publishMaterial(kv, source(base(), [space("alpha")]));
    const enc = (v: unknown): Uint8Array => new TextEncoder().encode(typeof v === "string" ? v : JSON.stringify(v));
    const refusal = async (key: string, value: Uint8Array | undefined, why: RegExp): Promise<void> => {
      const saved = kv.map.get(key);
      if (value === undefined) kv.map.delete(key);
      else kv.map.set(key, value);
      const err = await new MaterialReader().read(kv).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(isCotalError(err, "inventory-corrupt")).toBe(true);
      expect((err as Error).message).toMatch(why);
      kv.map.set(key, saved as Uint8Array);
    };
    await refusal(MATERIAL_INDEX_KEY, enc("{"), /key index .* not JSON/);
    await refusal(MATERIAL_INDEX_KEY, enc({ format: "other", base: "x", spaces: {} }), /not a cotal.node-material-index\/1 value/);
    await refusal(MATERIAL_BASE_KEY, enc({ format: "cotal.node-material/1" }), /key base .* not a cotal.node-material\/1 base/);
    await refusal(materialSpaceKey("alpha"), enc({ ...space("beta"), heldJwt: "h" }), /not the account of space alpha/);
    await refusal(materialSpaceKey("alpha"), undefined, /absent, though the index names it/);
    expect((await new MaterialReader().read(kv))?.spaces.map((s) => s.name)).toEqual(["alpha"]); // the control: restored, it reads
  });

  it("refuses each malformed index, base and tenant value, naming the key and how the control host republishes it", async () => {
    const kv = memoryKv();
    await publishMaterial(kv, source(base(), [space("alpha")]));
    const good = new Map(kv.map);
    const index = JSON.parse(new TextDecoder().decode(good.get(MATERIAL_INDEX_KEY))) as Record<string, unknown>;
    const b = base() as unknown as Record<string, unknown>;
    const a = { ...space("alpha"), heldJwt: "h" };
    const cases: [string, unknown][] = [
      ...[[], null, 7, { ...index, format: "x" }, { ...index, base: 1 }, { ...index, spaces: [] }, { ...index, spaces: null }, { ...index, spaces: { alpha: 1 } }, { ...index, spaces: { ...(index.spaces as object), beta: 1 } }].map((v) => [MATERIAL_INDEX_KEY, v] as [string, unknown]),
      ...[[], null, { ...b, format: "x" }, ...["operator", "system", "authority", "cluster"].flatMap((k) => [{ ...b, [k]: undefined }, { ...b, [k]: "x" }, { ...b, [k]: [] }]), { ...b, maxPayload: "1" }].map((v) => [MATERIAL_BASE_KEY, v] as [string, unknown]),
      ...[[], null, { ...a, name: "beta" }, ...["publicKey", "jwt", "heldJwt"].flatMap((k) => [{ ...a, [k]: undefined }, { ...a, [k]: "" }, { ...a, [k]: 1 }])].map((v) => [materialSpaceKey("alpha"), v] as [string, unknown]),
    ];
    for (const [key, value] of cases) {
      kv.map.clear();
      for (const [k, v] of good) kv.map.set(k, v);
      kv.map.set(key, new TextEncoder().encode(JSON.stringify(value)));
      const err = await new MaterialReader().read(kv).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(isCotalError(err, "inventory-corrupt"), `${key} = ${JSON.stringify(value)}`).toBe(true);
      if (!isCotalError(err)) continue;
      expect(err.message).toContain(`key ${key} in bucket cotal_node_material is unusable`);
      expect(err.next).toMatch(/^cotal up --detach {3}# run on the control host/);
      expect(err.details).toMatchObject({ bucket: "cotal_node_material", key });
    }
  });

  it("indexes each key by a 32-hex digest, and rewrites the index when only the base moved", async () => {
    const kv = memoryKv();
    const first = await publishMaterial(kv, source(base(), [space("alpha")]));
    expect([first.index.base, ...Object.values(first.index.spaces)].every((d) => /^[0-9a-f]{32}$/.test(d))).toBe(true);
    kv.writes.length = 0;
    const moved = await publishMaterial(kv, source({ ...base(), maxPayload: 2097152 }, [space("alpha")]));
    expect(moved).toMatchObject({ base: true, spaces: [], deletes: [] });
    expect(kv.writes).toEqual(["put base", "put index"]);
    expect((await new MaterialReader().read(kv))?.maxPayload).toBe(2097152);
  });

  it("carries a real root's material: no seed in any value, and each node renders from it what renderNode writes", async () => {
    const root = await threeHostRoot(roots);
    saveSpaceAccount(root.layout, toAccountRecord(createAccountTrust(loadBrokerTrust(root.layout).operator, "beta", { kind: "space" })));
    const kv = memoryKv();
    await publishMaterial(kv, materialSource(root.layout));
    const values = [...kv.map.values()].map((v) => new TextDecoder().decode(v)).join("\n");
    expect(values).toContain(loadSpaceAccount(root.layout, "beta")?.jwt); // the scan reads real values
    expect(values).not.toMatch(/S[OAUNCX][A-Z2-7]{56}/);
    const m = await new MaterialReader().read(kv);
    if (!m) throw new Error("nothing published");
    const records = [root.firstSpace, "beta"].map((n) => loadSpaceAccount(root.layout, n) as AccountRecord);
    for (const node of ["cm-n1", "cm-n2", "cm-n3"]) {
      expect(renderNodeFrom(m, node, materialSpaces(m, [root.firstSpace, "beta"]), nodeLocalOf(root.layout, node)).text).toBe(renderNode(root.layout, node, records).text);
    }
  });
});
