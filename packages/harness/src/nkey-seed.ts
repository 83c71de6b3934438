/** An nkeys seed (operator, account, user, server, cluster, curve, xkey): never in an image, a node's directory or an output. */
export const NKEY_SEED = /S[OAUNCPX][A-Z2-7]{55}/;
