import { type Guards } from "../guards.js";
import { failpoint } from "../failpoints.js";
import type { InventoryStore } from "../inventory/inventory-store.js";
import type { InventoryRecord } from "../inventory/record.js";

/** Seeds the inventory with a create-only CAS: a second seeder loses, it never overwrites (`conflict`). */
export async function seedInventory(store: InventoryStore, record: InventoryRecord, guards: Guards): Promise<number> {
  await failpoint("before-seed");
  if (guards.DISABLE_SEED_CAS) {
    const cur = await store.read();
    if (cur) return store.update(record, cur.revision);
  }
  return store.create(record);
}
