// @cotal/core/testing: the in-memory seams (store, reloader, temp root) that run the saga without nats-server or KV.
export { MemoryInventoryStore, ManualClock, type MemoryStoreOptions, type StoreFault, type StoreOp } from "./memory-store.js";
export { FakeReloader, type ScriptedVerdict } from "./fake-reloader.js";
export { createTempRoot, memorySaga, type MemorySaga, type TempRoot } from "./temp-root.js";
