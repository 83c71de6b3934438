// `@cotal/saga/provision`: a space's streams and buckets, its teardown user and connection eviction.
export { PROVISION_CONCURRENCY, provisionSpace, type ProvisionResult } from "../provision/provision-space.js";
export { provisionSpaces, writeObserverCredsBatch } from "../provision/provision-batch.js";
export { DEFAULT_SPACE_QUOTA, spaceTemplate, templateStreamNames } from "../provision/template.js";
export { DEFAULT_JETSTREAM_BUDGET } from "../provision/quota-budget.js";
export { deleteSpaceStreams, mintTeardownCreds } from "../provision/teardown-space.js";
export { evictAccountConnections, evictorCredsFile } from "../provision/evict-connections.js";
export { evictEverywhere } from "../provision/evict-cluster.js";
