/** `@cotal/saga/testing`: run the mutation saga in memory (no nats-server, no KV). */
export { MemoryInventoryStore, ManualClock, type MemoryStoreOptions, type StoreFault, type StoreOp } from "./memory-store.js";
export { FakeReloader, type ScriptedVerdict } from "./fake-reloader.js";
export { createTempRoot, memorySaga, type MemorySaga, type TempRoot } from "./temp-root.js";
