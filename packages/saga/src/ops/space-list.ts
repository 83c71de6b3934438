import { status, type StatusReport } from "./status.js";

export type SpaceState = "active" | "excluded" | "pending-add" | "pending-remove" | "disk-only" | "kv-only" | "not-in-config" | "unknown";

export interface SpaceListEntry {
  name: string;
  state: SpaceState;
  publicKey: string | null;
  inConfig: boolean;
  inInventory: boolean | null;
}

export interface SpaceListReport {
  root: string;
  state: StatusReport["state"];
  generation: number | null;
  spaces: SpaceListEntry[];
  corrupt: StatusReport["corrupt"];
  inventoryError?: string;
}

/** Every tenant the disk or the KV names, with where it stands. Read-only. */
export async function spaceList(opts: { root: string }): Promise<SpaceListReport> {
  return spaceListFrom(await status(opts));
}

/** The list from a status report already read (the dashboard reads status once for both). Pure. */
export function spaceListFrom(s: StatusReport): SpaceListReport {
  const inv = s.inventory;
  const pendingAdds = new Set(inv?.pending?.adds ?? []);
  const pendingRemoves = new Set(inv?.pending?.removes ?? []);
  const names = new Set([...s.spaces.map((x) => x.name), ...(inv?.spaces ?? []), ...pendingAdds]);
  // Maps and Sets, not find/includes per name: linear at 10,000 tenants.
  const onDisk = new Map(s.spaces.map((x) => [x.name, x]));
  const kv = inv ? new Set(inv.spaces) : undefined;
  const excluded = new Set(inv?.excluded ?? []);
  const spaces: SpaceListEntry[] = [...names].sort().map((name) => {
    const disk = onDisk.get(name);
    const inKv = kv ? kv.has(name) : null;
    let state: SpaceState;
    if (pendingAdds.has(name)) state = "pending-add";
    else if (excluded.has(name)) state = "excluded";
    else if (pendingRemoves.has(name)) state = "pending-remove";
    else if (!disk) state = "kv-only";
    else if (inKv === false) state = "disk-only";
    else if (s.broker.running && !disk.inConfig) state = "not-in-config";
    else if (inKv === null && !s.broker.running) state = "unknown";
    else state = "active";
    return { name, state, publicKey: disk?.publicKey ?? null, inConfig: disk?.inConfig ?? false, inInventory: inKv };
  });
  return { root: s.root, state: s.state, generation: inv?.generation ?? null, spaces, corrupt: s.corrupt, ...(s.inventoryError ? { inventoryError: s.inventoryError } : {}) };
}
