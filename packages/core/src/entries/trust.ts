// @cotal/core/trust: keys, JWTs and creds, for benchmarks and live tests that mint accounts without a root's verbs.
export { createKeyPair } from "../trust/nkeys.js";
export { decodeJwt, signJwt } from "../trust/jwt.js";
export { createBrokerTrust, type BrokerTrust } from "../trust/broker.js";
export { createAccountTrust, type AccountTrust } from "../trust/account.js";
export { mintSystemUserCreds, mintUserCreds } from "../trust/user.js";
export { nativeCredsAuthenticator, parseCreds, type ParsedCreds } from "../trust/creds-file.js";
export { evictorPermissions, inboxPrefixOf } from "../trust/permissions.js";
export { mintObserverCreds, observerIsCurrent } from "../saga/materialise.js";
export { quotaLimits, type AccountLimits } from "../trust/limits.js";
