/**
 * Mint rate of the trust module (moved here from packages/core/src/bench/mint-accounts.ts): ms per
 * account JWT, per createAccountTrust, per user creds.
 *
 *   node packages/bench/dist/mint.js [--n 1000]
 */
import { UNLIMITED_JETSTREAM } from "@cotal/core";
import { createAccountTrust, createBrokerTrust, createKeyPair, mintUserCreds, signJwt } from "@cotal/core/trust";
import { parseArgs } from "./lib/args.js";
import { runBench } from "./lib/cleanup.js";
import { writeResult } from "./lib/out.js";
import { round } from "./lib/stats.js";

const count = parseArgs().int("n", 1000);

await runBench(async () => {
  const rows: { label: string; msEach: number; n: number; totalMs: number }[] = [];
  const time = (label: string, n: number, run: (i: number) => void): void => {
    for (let i = 0; i < Math.min(100, n); i++) run(i); // warm the JIT and the signer cache
    const start = process.hrtime.bigint();
    for (let i = 0; i < n; i++) run(i);
    const total = Number(process.hrtime.bigint() - start) / 1e6;
    rows.push({ label, msEach: round(total / n, 4), n, totalMs: round(total, 1) });
    console.log(`${label.padEnd(48)} ${(total / n).toFixed(4)} ms each  (${n} in ${total.toFixed(1)} ms)`);
  };

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

  console.log(`wrote ${writeResult("mint", { n: count, rows })}`);
});
