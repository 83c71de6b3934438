// @cotal/saga/light: what an entry needs before it runs a verb, without nats.js or the verbs: the guards and saga limits
// it hands in, space names, the root's path and the quota fields. The CLI's start-up loads only this and ./errors (issue 35).
export { GUARDS_ON, guardsFromEnv, sagaLimitsFromEnv, type GuardSwitch, type Guards, type SagaLimits } from "../guards.js";
export { SPACE_NAME_RULE, assertSpaceName, isValidSpaceName } from "../names.js";
export { resolveRoot } from "../root/layout.js";
export { QUOTA_FIELDS, formatBytes, parseQuota, type SpaceQuota } from "../trust/limits.js";
