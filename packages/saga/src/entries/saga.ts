// `@cotal/saga/saga`: the mutation saga itself, for callers that drive it below the verbs
// (benchmarks that trust tenants without provisioning them). Verbs are the supported surface.
export { decisionRead, intentDelta, runMutation, type MutationIntent, type MutationResult, type SagaEnv } from "../saga/mutation.js";
export { openLiveSession, type LiveSession } from "../verb/session.js";
