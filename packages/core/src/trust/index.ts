// The trust module: nkeys, JWTs and creds for the operator, system, space and authority accounts.
export { createKeyPair, isPublicKey, keyPairFromSeed, signWithSeed, verifySignature } from "./nkeys.js";
export type { KeyPair, KeyRole } from "./nkeys.js";
export { decodeJwt, signJwt, verifyJwt } from "./jwt.js";
export type { JwtClaims } from "./jwt.js";
export { DEFAULT_SPACE_QUOTA, MIN_SPACE_DISK, NO_JETSTREAM, QUOTA_FIELDS, UNLIMITED_JETSTREAM, formatBytes, limitsQuota, parseBytes, parseQuota, quotaLimits } from "./limits.js";
export type { AccountLimits, SpaceQuota } from "./limits.js";
export { createBrokerTrust, rotateSystemAccount } from "./broker.js";
export type { BrokerTrust } from "./broker.js";
export { createAccountTrust, resignAccountLimits, resignAccountRevocations, revokeAllBefore, revokeAllBeforeOf } from "./account.js";
export type { AccountKind, AccountTrust } from "./account.js";
export { formatCreds, mintSystemUserCreds, mintUserCreds } from "./user.js";
export type { UserCreds, UserCredsOptions } from "./user.js";
export * from "./creds-file.js";
export * from "./permissions.js";
export { redactSeeds } from "../redact.js";
