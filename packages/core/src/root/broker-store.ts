import { failpointSync } from "../failpoints.js";
import { existsSync } from "node:fs";
import { CotalError } from "../errors.js";
import type { BrokerTrust } from "../trust/index.js";
import { keyPairFromSeed } from "../trust/index.js";
import { decodeJwt } from "../trust/jwt.js";
import type { RootLayout } from "./layout.js";
import { BROKER_FORMAT, parseBrokerRecord, type BrokerRecord } from "./records.js";
import { ensureSecretDir, readTextIfExists, writeFileAtomic, writeJsonAtomic } from "./secret-files.js";

/** Broker trust as loaded from a root: the public record plus whichever seeds the root retains. */
export interface LoadedBroker extends BrokerTrust {
  multiSpace: boolean;
}

/** broker.json's public projection of broker trust: seeds never go in it. */
function toBrokerRecord(trust: BrokerTrust, multiSpace: boolean, createdAt: string): BrokerRecord {
  return {
    format: BROKER_FORMAT,
    operator: { publicKey: trust.operator.publicKey, jwt: trust.operator.jwt },
    system: { publicKey: trust.system.publicKey, jwt: trust.system.jwt, signingKey: trust.system.signingKey },
    generation: trust.generation,
    multiSpace,
    createdAt,
  };
}

/** Refuses to overwrite: a root's operator is minted once, and a second mint would orphan every tenant. */
export function saveBrokerTrust(layout: RootLayout, trust: BrokerTrust, multiSpace: boolean): void {
  if (existsSync(layout.brokerFile)) {
    throw new CotalError("invalid-argument", `broker trust already exists at ${layout.brokerFile}; refusing to mint a second operator`, {
      next: "cotal status",
    });
  }
  ensureSecretDir(layout.brokerSecretsDir);
  writeFileAtomic(layout.operatorSeedFile, `${trust.operator.seed}\n`);
  if (multiSpace) {
    if (!trust.system.signingSeed) throw new CotalError("system-seed-absent", "multi-space root needs the system signing seed at creation");
    writeFileAtomic(layout.systemSigningSeedFile, `${trust.system.signingSeed}\n`);
  }
  writeJsonAtomic(layout.brokerFile, toBrokerRecord(trust, multiSpace, trust.createdAt));
}

function readSeed(path: string, expectPublic: string, what: string): string {
  const text = readTextIfExists(path);
  if (text === undefined) throw new CotalError("missing-broker-trust", `${what} seed is missing (${path})`, { next: "restore the root's auth/ directory from a backup" });
  const seed = text.trim();
  let pub: string;
  try {
    pub = keyPairFromSeed(seed).publicKey;
  } catch {
    throw new CotalError("corrupt-record", `${path} does not hold a valid seed`, { next: `restore ${path} from a backup` });
  }
  if (pub !== expectPublic) throw new CotalError("corrupt-record", `${path} holds a seed for another key than broker.json names`, { next: `restore ${path} from a backup` });
  return seed;
}

export function brokerTrustExists(layout: RootLayout): boolean {
  return existsSync(layout.brokerFile);
}

export function loadBrokerTrust(layout: RootLayout): LoadedBroker {
  const text = readTextIfExists(layout.brokerFile);
  if (text === undefined) {
    throw new CotalError("missing-broker-trust", `no broker trust at ${layout.brokerFile}`, {
      next: `cotal up --root ${layout.root}   # creates a root with its operator and a first space`,
    });
  }
  const rec = parseBrokerRecord(text);
  if (typeof rec === "string") {
    throw new CotalError("corrupt-record", `${layout.brokerFile} is unusable: ${rec}`, {
      next: `restore ${layout.brokerFile} from a backup; do not re-create it (a new operator orphans every tenant)`,
      details: { path: layout.brokerFile, reason: rec },
    });
  }
  const operatorSeed = readSeed(layout.operatorSeedFile, rec.operator.publicKey, "operator");
  let signingSeed: string | undefined;
  if (existsSync(layout.systemSigningSeedFile)) signingSeed = readSeed(layout.systemSigningSeedFile, rec.system.signingKey, "system signing");
  return {
    operator: { publicKey: rec.operator.publicKey, jwt: rec.operator.jwt, seed: operatorSeed },
    system: { publicKey: rec.system.publicKey, jwt: rec.system.jwt, signingKey: rec.system.signingKey, ...(signingSeed ? { signingSeed } : {}) },
    generation: rec.generation,
    createdAt: rec.createdAt,
    multiSpace: rec.multiSpace,
  };
}

/**
 * Replaces broker trust with its successor (rotate-sys): same operator, generation + 1, enforced
 * here so a stale or foreign record can never overwrite a newer one. Seed first, record last.
 */
export function replaceBrokerTrust(layout: RootLayout, current: LoadedBroker, next: BrokerTrust): void {
  if (next.operator.publicKey !== current.operator.publicKey) {
    throw new CotalError("foreign-operator", "a rotation must keep the operator", { next: "cotal status" });
  }
  if (next.generation !== current.generation + 1) {
    throw new CotalError("conflict", `broker trust generation ${current.generation} may only be succeeded by ${current.generation + 1}, not ${next.generation}`, { next: "cotal status" });
  }
  if (!next.system.signingSeed) throw new CotalError("system-seed-absent", "a rotation retains the system signing seed");
  ensureSecretDir(layout.brokerSecretsDir);
  writeFileAtomic(layout.systemSigningSeedFile, `${next.system.signingSeed}\n`);
  failpointSync("rotate-seed-written");
  writeJsonAtomic(layout.brokerFile, toBrokerRecord(next, true, current.createdAt));
}

/**
 * The system account's JWT re-signed in place (a user revoked at `cotal node forget`, docs/cluster.md
 * "Leaving: cotal node forget"): the same keys and generation, only the JWT changes, and it must name
 * the same account and operator.
 */
export function reviseSystemJwt(layout: RootLayout, current: LoadedBroker, jwt: string): void {
  const claims = decodeJwt(jwt);
  if (claims.sub !== current.system.publicKey || claims.iss !== current.operator.publicKey) {
    throw new CotalError("foreign-operator", "a revised system account JWT must name the same account and operator", { next: "cotal status" });
  }
  writeJsonAtomic(layout.brokerFile, toBrokerRecord({ ...current, system: { ...current.system, jwt } }, current.multiSpace, current.createdAt));
}
