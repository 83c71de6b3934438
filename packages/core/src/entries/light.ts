// @cotal/core/light: what the CLI's start-up needs (guards, limits, names, root path, quotas), without nats.js (issue 35).
export { GUARDS_ON, guardsFromEnv, sagaLimitsFromEnv, type GuardSwitch, type Guards, type SagaLimits } from "../guards.js";
export { SPACE_NAME_RULE, assertSpaceName, isValidSpaceName } from "../names.js";
export { resolveRoot } from "../root/layout.js";
export { QUOTA_FIELDS, formatBytes, parseQuota, type SpaceQuota } from "../trust/limits.js";
export { within } from "../retry.js";
