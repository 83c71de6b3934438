import { type Guards } from "../guards.js";
import { status, type StatusReport } from "./status.js";

/**
 * `removing`: a standing `space rm` journal entry names it (every other verb refuses it until the rm
 * is re-run); `quiesced`: an online backup/restore holds it (its clients are refused until the lift).
 */
export type SpaceState = "active" | "removing" | "quiesced" | "excluded" | "pending-add" | "pending-remove" | "disk-only" | "kv-only" | "not-in-config" | "unknown";

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
export async function spaceList(opts: { root: string; guards?: Guards }): Promise<SpaceListReport> {
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
  // status already read both: the journal entry, and the quiesced set (a standing quiesce entry or the JWT's revocations["*"])
  const removing = s.journal?.op === "space-rm" ? s.journal.space : undefined;
  const quiesced = new Set(s.quiesced.map((q) => q.space));
  const spaces: SpaceListEntry[] = [...names].sort().map((name) => {
    const disk = onDisk.get(name);
    const inKv = kv ? kv.has(name) : null;
    let state: SpaceState;
    if (name === removing) state = "removing";
    else if (quiesced.has(name)) state = "quiesced";
    else if (pendingAdds.has(name)) state = "pending-add";
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
