/**
 * The public bucket a cluster node renders from (docs/cluster.md "The public bucket"): the node
 * material (broker/node-material.ts) as one KV key for the base and one per tenant, plus an index of
 * their digests. The writer publishes under its lease before a claim's first node rename; an agent
 * reads it through its own server and fetches only the keys whose digest moved.
 */
import { createHash } from "node:crypto";
import { CotalError } from "../errors.js";
import type { RenderAccount } from "../render/server-config.js";
import type { MaterialAccount, MaterialSource, NodeBase, NodeMaterial } from "./node-material.js";

/** Beside the record's bucket, in the authority account; no space token in its name (a whole-broker resource). */
export const MATERIAL_BUCKET = "cotal_node_material";
export const MATERIAL_INDEX_KEY = "index";
export const MATERIAL_BASE_KEY = "base";
export const materialSpaceKey = (name: string): string => `space.${name}`;

/** The few calls the bucket needs, so publishing and reading run without a server in units. */
export interface MaterialKv {
  /** undefined when the key is absent or deleted. */
  get(key: string): Promise<Uint8Array | undefined>;
  put(key: string, value: Uint8Array): Promise<void>;
  delete(key: string): Promise<void>;
}

/** Digests of what the bucket holds: a reader fetches a key only when its digest moved. */
export interface MaterialIndex {
  format: "cotal.node-material-index/1";
  base: string;
  spaces: Record<string, string>;
}

export interface PublishPlan {
  base: boolean;
  /** Tenants whose key is written. */
  spaces: string[];
  /** Tenants whose key is deleted: no account record on the control host any more (a removal committed). */
  deletes: string[];
  index: MaterialIndex;
}

const hex = (text: string): string => createHash("sha256").update(text).digest("hex").slice(0, 32);

/** Pure: a tenant's digest; its held twin follows from its JWT and the operator, so both are in it. */
export function spaceDigest(operatorKey: string, s: RenderAccount): string {
  return hex(JSON.stringify([operatorKey, s.name, s.publicKey, s.jwt]));
}

/** Pure: what a publish writes, given what the bucket's index says it holds. */
export function publishPlan(index: MaterialIndex | undefined, base: NodeBase, spaces: readonly RenderAccount[]): PublishPlan {
  const next: MaterialIndex = { format: "cotal.node-material-index/1", base: hex(JSON.stringify(base)), spaces: {} };
  for (const s of spaces) next.spaces[s.name] = spaceDigest(base.operator.publicKey, s);
  const held = index?.spaces ?? {};
  return {
    base: index?.base !== next.base,
    spaces: Object.keys(next.spaces).filter((name) => held[name] !== next.spaces[name]),
    deletes: Object.keys(held).filter((name) => !(name in next.spaces)),
    index: next,
  };
}

const encode = (value: unknown): Uint8Array => new TextEncoder().encode(JSON.stringify(value));

/**
 * Publishes the material: changed keys first, then deletes, then the index last, so an index never
 * names a digest its key does not hold yet (a publish cut short is redone by the next one).
 */
export async function publishMaterial(kv: MaterialKv, source: MaterialSource): Promise<PublishPlan> {
  const plan = publishPlan(await readIndex(kv), source.base, source.spaces);
  if (plan.base) await kv.put(MATERIAL_BASE_KEY, encode(source.base));
  const byName = new Map(source.spaces.map((s) => [s.name, s] as const));
  for (const name of plan.spaces) {
    const s = byName.get(name) as RenderAccount;
    const value: MaterialAccount = { name: s.name, publicKey: s.publicKey, jwt: s.jwt, heldJwt: source.held(s.jwt) };
    await kv.put(materialSpaceKey(name), encode(value));
  }
  for (const name of plan.deletes) await kv.delete(materialSpaceKey(name));
  if (plan.base || plan.spaces.length > 0 || plan.deletes.length > 0) await kv.put(MATERIAL_INDEX_KEY, encode(plan.index));
  return plan;
}

function unusable(key: string, why: string): CotalError {
  return new CotalError("inventory-corrupt", `the node material's key ${key} in bucket ${MATERIAL_BUCKET} is unusable: ${why}`, {
    next: "cotal up --detach   # run on the control host: its cluster reload publishes the node material again",
    details: { bucket: MATERIAL_BUCKET, key, why },
  });
}

async function readJson(kv: MaterialKv, key: string): Promise<unknown> {
  const bytes = await kv.get(key);
  if (bytes === undefined) return undefined;
  try {
    return JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes)) as unknown;
  } catch (err) {
    throw unusable(key, `not JSON (${(err as Error).message})`);
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const strings = (v: Record<string, unknown>, keys: readonly string[]): boolean => keys.every((k) => typeof v[k] === "string" && (v[k] as string).length > 0);

async function readIndex(kv: MaterialKv): Promise<MaterialIndex | undefined> {
  const v = await readJson(kv, MATERIAL_INDEX_KEY);
  if (v === undefined) return undefined;
  if (!isObject(v) || v.format !== "cotal.node-material-index/1" || typeof v.base !== "string" || !isObject(v.spaces) || !Object.values(v.spaces).every((d) => typeof d === "string")) {
    throw unusable(MATERIAL_INDEX_KEY, "not a cotal.node-material-index/1 value");
  }
  return v as unknown as MaterialIndex;
}

function asBase(v: unknown): NodeBase {
  if (!isObject(v) || v.format !== "cotal.node-material/1" || !isObject(v.operator) || !isObject(v.system) || !isObject(v.authority) || !isObject(v.cluster) || typeof v.maxPayload !== "number") {
    throw unusable(MATERIAL_BASE_KEY, "not a cotal.node-material/1 base");
  }
  return v as unknown as NodeBase;
}

function asSpace(key: string, name: string, v: unknown): MaterialAccount {
  if (!isObject(v) || !strings(v, ["name", "publicKey", "jwt", "heldJwt"]) || v.name !== name) throw unusable(key, `not the account of space ${name}`);
  return { name, publicKey: v.publicKey as string, jwt: v.jwt as string, heldJwt: v.heldJwt as string };
}

/**
 * An agent's view of the bucket: each round reads the index and fetches only the keys whose digest
 * moved since (a key newer than its index entry is refetched when the next index names it).
 */
export class MaterialReader {
  #base: { digest: string; value: NodeBase } | undefined;
  readonly #spaces = new Map<string, { digest: string; value: MaterialAccount }>();
  /** Keys fetched by this reader, for the agent's event line and the units. */
  fetched = 0;

  /** undefined when nothing was published yet (a root whose control host ran no cluster reload since). */
  async read(kv: MaterialKv): Promise<NodeMaterial | undefined> {
    const index = await readIndex(kv);
    if (!index) return undefined;
    if (this.#base?.digest !== index.base) this.#base = { digest: index.base, value: asBase(await this.#fetch(kv, MATERIAL_BASE_KEY)) };
    for (const name of this.#spaces.keys()) if (!(name in index.spaces)) this.#spaces.delete(name);
    for (const [name, digest] of Object.entries(index.spaces)) {
      if (this.#spaces.get(name)?.digest === digest) continue;
      const key = materialSpaceKey(name);
      this.#spaces.set(name, { digest, value: asSpace(key, name, await this.#fetch(kv, key)) });
    }
    return { ...this.#base.value, spaces: [...this.#spaces.values()].map((s) => s.value) };
  }

  async #fetch(kv: MaterialKv, key: string): Promise<unknown> {
    this.fetched++;
    const v = await readJson(kv, key);
    if (v === undefined) throw unusable(key, "absent, though the index names it");
    return v;
  }
}
