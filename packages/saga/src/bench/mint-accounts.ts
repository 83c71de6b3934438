/**
 * Mint-rate bench for the trust module (run after build: `node packages/saga/dist/bench/mint-accounts.js [count]`).
 * Lives in src so the normal build compiles it; Node 20 cannot run the .ts directly.
 */
import { createAccountTrust } from "../trust/account.js";
import { createBrokerTrust } from "../trust/broker.js";
import { signJwt } from "../trust/jwt.js";
import { UNLIMITED_JETSTREAM } from "../trust/limits.js";
import { createKeyPair } from "../trust/nkeys.js";
import { mintUserCreds } from "../trust/user.js";

const count = Number.parseInt(process.argv[2] ?? "1000", 10);
if (!Number.isSafeInteger(count) || count <= 0) throw new Error("count must be a positive integer");

function time(label: string, n: number, run: (i: number) => void): number {
  for (let i = 0; i < Math.min(100, n); i++) run(i); // warm the JIT and the signer cache
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) run(i);
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  console.log(`${label.padEnd(48)} ${(ms / n).toFixed(4)} ms each  (${n} in ${ms.toFixed(1)} ms)`);
  return ms / n;
}

const broker = createBrokerTrust({ name: "bench", retainSystemSigningSeed: true });
const operator = broker.operator;

// The account JWT alone: claims + jti hash + one operator signature (keys made beforehand).
const identities = Array.from({ length: count }, () => createKeyPair("account").publicKey);
const signingKey = createKeyPair("account").publicKey;
time("account JWT (signJwt only)", count, (i) => {
  signJwt(
    {
      iss: operator.publicKey,
      sub: identities[i] as string,
      name: `space-${i}`,
      nats: { limits: { ...UNLIMITED_JETSTREAM }, signing_keys: [signingKey], type: "account", version: 2 },
    },
    operator.seed,
  );
});

// What a new space costs end to end: two fresh account nkeys + the signed account JWT.
const accounts: ReturnType<typeof createAccountTrust>[] = [];
time("createAccountTrust (2 nkeys + JWT)", count, (i) => {
  accounts.push(createAccountTrust(operator, `space-${i}`, { kind: "space" }));
});

// One user per account, each signed by that account's signing key (so the signer cache misses).
time("mintUserCreds (1 nkey + JWT + creds)", count, (i) => {
  const account = accounts[i % accounts.length] as (typeof accounts)[number];
  mintUserCreds(account, { name: `user-${i}`, allowPub: ["work.>"], allowSub: ["_INBOX.>"] });
});

// Many users of one account (the signer cache hits).
const one = accounts[0] as (typeof accounts)[number];
time("mintUserCreds, same account", count, (i) => {
  mintUserCreds(one, { name: `user-${i}` });
});
