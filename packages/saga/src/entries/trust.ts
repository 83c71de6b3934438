// `@cotal/saga/trust`: keys, JWTs and creds for the operator, system, space and authority accounts.
export { createKeyPair, isPublicKey, keyPairFromSeed, type KeyPair, type KeyRole } from "../trust/nkeys.js";
export { decodeJwt, signJwt, verifyJwt, type JwtClaims } from "../trust/jwt.js";
export { createBrokerTrust, type BrokerTrust } from "../trust/broker.js";
export { createAccountTrust, type AccountKind, type AccountTrust } from "../trust/account.js";
export { formatCreds, mintSystemUserCreds, mintUserCreds, type UserCreds, type UserCredsOptions } from "../trust/user.js";
export { nativeCredsAuthenticator, parseCreds, type ParsedCreds } from "../trust/creds-file.js";
export { evictorPermissions, inboxPrefixOf } from "../trust/permissions.js";
export { mintObserverCreds, observerIsCurrent } from "../saga/materialise.js";
export { quotaLimits } from "../trust/limits.js";
