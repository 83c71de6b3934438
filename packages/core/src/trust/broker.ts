/**
 * The broker's root of trust: a self-signed operator and the system account it names. The system
 * account's identity seed is dropped after signing; only its signing key can mint system users.
 */
import { signJwt } from "./jwt.js";
import { NO_JETSTREAM } from "./limits.js";
import { createKeyPair } from "./nkeys.js";

export interface BrokerTrust {
  operator: { publicKey: string; jwt: string; seed: string };
  /** signingSeed is present only when the caller chose to retain it. */
  system: { publicKey: string; jwt: string; signingKey: string; signingSeed?: string };
  /** System-account generation; starts at 1 and is bumped by whoever rotates it. */
  generation: number;
  createdAt: string;
}

const DEFAULT_OPERATOR_NAME = "cotal";
const SYSTEM_ACCOUNT_NAME = "SYS";

export function createBrokerTrust(opts: { name?: string; retainSystemSigningSeed: boolean }): BrokerTrust {
  const operator = createKeyPair("operator");
  return mintSystemChain(operator, { name: opts.name ?? DEFAULT_OPERATOR_NAME, retainSystemSigningSeed: opts.retainSystemSigningSeed, generation: 1 });
}

/**
 * A successor system account under the same operator (rotate-sys): a new identity and signing key,
 * and the operator JWT re-signed to name it. Every $SYS user of the retired chain stops connecting.
 */
export function rotateSystemAccount(current: BrokerTrust, opts: { name?: string } = {}): BrokerTrust {
  return mintSystemChain(
    { publicKey: current.operator.publicKey, seed: current.operator.seed },
    { name: opts.name ?? DEFAULT_OPERATOR_NAME, retainSystemSigningSeed: true, generation: current.generation + 1 },
  );
}

function mintSystemChain(operator: { publicKey: string; seed: string }, opts: { name: string; retainSystemSigningSeed: boolean; generation: number }): BrokerTrust {
  const now = new Date();
  const iat = Math.floor(now.getTime() / 1000);
  const systemIdentity = createKeyPair("account");
  const systemSigning = createKeyPair("account");

  const systemJwt = signJwt(
    {
      iat,
      iss: operator.publicKey,
      sub: systemIdentity.publicKey,
      name: SYSTEM_ACCOUNT_NAME,
      nats: { limits: { ...NO_JETSTREAM }, signing_keys: [systemSigning.publicKey], type: "account", version: 2 },
    },
    operator.seed,
  );
  const operatorJwt = signJwt(
    {
      iat,
      iss: operator.publicKey,
      sub: operator.publicKey,
      name: opts.name,
      nats: { system_account: systemIdentity.publicKey, type: "operator", version: 2 },
    },
    operator.seed,
  );

  return {
    operator: { publicKey: operator.publicKey, jwt: operatorJwt, seed: operator.seed },
    system: {
      publicKey: systemIdentity.publicKey,
      jwt: systemJwt,
      signingKey: systemSigning.publicKey,
      ...(opts.retainSystemSigningSeed ? { signingSeed: systemSigning.seed } : {}),
    },
    generation: opts.generation,
    createdAt: now.toISOString(),
  };
}
