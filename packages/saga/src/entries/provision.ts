// `@cotal/saga/provision`: a space's streams and buckets, its teardown user and connection eviction.
export { provisionSpace } from "../provision/provision-space.js";
export { templateStreamNames } from "../provision/template.js";
export { deleteSpaceStreams, mintTeardownCreds } from "../provision/teardown-space.js";
export { evictAccountConnections, evictorCredsFile } from "../provision/evict-connections.js";
export { evictEverywhere } from "../provision/evict-cluster.js";
