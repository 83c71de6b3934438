/**
 * The scripted full-resolver peer of one-add.ts, as its own process (so both arms pay a process start
 * and nats.js's load): `node peer-one.js <config.json> add <name> <record-out.json>` mints the account
 * (createAccountTrust's space default: cotal's default quota), pushes its JWT over $SYS.REQ.CLAIMS.UPDATE and creates the same template
 * (provisionSpace); `… rm <record.json>` deletes its streams, then sends $SYS.REQ.CLAIMS.DELETE (signed
 * by the operator), which makes nats-server lock the account out (removeCb). Prints `mark <what>
 * <epoch ms>` lines on stdout at each step's end. The config file (0600, written by one-add.ts) holds
 * the url, the system user's creds and the operator's seed; the record holds the account's seeds.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { connectWithCreds } from "@cotal/core/broker";
import { deleteSpaceStreams, provisionSpace } from "@cotal/core/provision";
import { toAccountRecord, type AccountRecord } from "@cotal/core/root";
import { createAccountTrust, signJwt } from "@cotal/core/trust";

export interface PeerOneConfig {
  url: string;
  sysCreds: string;
  operator: { publicKey: string; seed: string };
}

const mark = (what: string): void => void process.stdout.write(`mark ${what} ${Date.now()}\n`);

async function claimsRequest(cfg: PeerOneConfig, subject: string, body: string): Promise<void> {
  const sys = await connectWithCreds(cfg.url, cfg.sysCreds, { name: "peer-one" });
  mark("connected");
  try {
    const reply = await sys.request(subject, body, { timeout: 10_000 });
    const r = reply.json<{ data?: { code?: number }; error?: { code?: number; description?: string } }>();
    if (r.data?.code !== 200) throw new Error(`${subject}: ${JSON.stringify(r.error ?? r)}`);
  } finally {
    await sys.close();
  }
}

async function add(cfg: PeerOneConfig, name: string, out: string): Promise<void> {
  const rec = toAccountRecord(createAccountTrust(cfg.operator, name, { kind: "space" }));
  writeFileSync(out, JSON.stringify(rec), { mode: 0o600 }); // the peer keeps its seeds unsynced, as its resolver does its JWTs
  mark("minted");
  await claimsRequest(cfg, "$SYS.REQ.CLAIMS.UPDATE", rec.jwt);
  mark("claimed");
  await provisionSpace(cfg.url, rec);
  mark("provisioned");
}

async function rm(cfg: PeerOneConfig, recordFile: string): Promise<void> {
  const rec = JSON.parse(readFileSync(recordFile, "utf8")) as AccountRecord;
  await deleteSpaceStreams(cfg.url, rec);
  mark("streams-deleted");
  // nats-server's delete request: a generic claim the operator signs about itself, naming the accounts.
  const req = signJwt({ iss: cfg.operator.publicKey, sub: cfg.operator.publicKey, name: "delete", nats: { type: "generic", version: 2, accounts: [rec.publicKey] } }, cfg.operator.seed);
  await claimsRequest(cfg, "$SYS.REQ.CLAIMS.DELETE", req);
  mark("deleted");
}

const [configFile, verb, a, b] = process.argv.slice(2);
const cfg = JSON.parse(readFileSync(configFile as string, "utf8")) as PeerOneConfig;
if (verb === "add") await add(cfg, a as string, b as string);
else if (verb === "rm") await rm(cfg, a as string);
else throw new Error(`peer-one: add <name> <out> | rm <record>, not ${verb}`);
