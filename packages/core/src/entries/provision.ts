// @cotal/core/provision: a space's template, provisioning, teardown and eviction, for the CLI's confirmation, benchmarks and live tests.
export { PROVISION_CONCURRENCY, provisionSpace } from "../provision/provision-space.js";
export { writeObserverCredsBatch } from "../provision/provision-batch.js";
export { spaceTemplate, templateStreamNames } from "../provision/template.js";
export { DEFAULT_SPACE_QUOTA } from "../trust/limits.js";
export { DEFAULT_JETSTREAM_BUDGET } from "../broker/quota-budget.js";
export { deleteSpaceStreams, mintTeardownCreds } from "../provision/teardown-space.js";
export { evictAccountConnections, evictorCredsFile } from "../broker/evict-connections.js";
export { evictEverywhere } from "../provision/evict-cluster.js";
