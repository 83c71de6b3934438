import { readFileSync, statSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { AGENT_SYSTEM_PUB, agentAuthorityPub, agentCredsFiles, credsUserKey, ensureAgentCreds, readAgentCreds, revokeAgentAuthority, revokeAgentSystem } from "../src/root/agent-creds.js";
import { userRevocations } from "../src/trust/user-revocations.js";
import { loadAuthorityAccount } from "../src/root/account-store.js";
import { loadBrokerTrust } from "../src/root/broker-store.js";
import { decodeJwt, verifyJwt } from "../src/trust/index.js";
import { GUARDS_ON } from "../src/guards.js";
import type { TempRoot } from "../src/testing/index.js";
import { threeHostRoot } from "./fixtures/cluster-root.js";

// docs/cluster.md "The agent's own users": the node's host holds two user keys, no account seed, and
// the authority user may not write the node material or create a stream.

const roots: TempRoot[] = [];
afterEach(() => roots.splice(0).forEach((r) => r.remove()));

const jwtOf = (creds: string): ReturnType<typeof decodeJwt> => decodeJwt(/-----BEGIN NATS USER JWT-----\n(\S+)\n/.exec(creds)?.[1] ?? "");

describe("a node agent's own users", () => {
  it("are minted once, 0600 in a 0700 directory, each a user key of its account with its allow lists", async () => {
    const root = await threeHostRoot(roots);
    expect(readAgentCreds(root.layout, "cm-n2")).toBeUndefined();
    expect(ensureAgentCreds(root.layout, "cm-n2")).toBe(true);
    const f = agentCredsFiles(root.layout, "cm-n2");
    expect(statSync(f.dir).mode & 0o777).toBe(0o700);
    const first = readAgentCreds(root.layout, "cm-n2");
    if (!first) throw new Error("not written");
    for (const file of [f.authority, f.system]) {
      expect(statSync(file).mode & 0o777).toBe(0o600);
      const text = readFileSync(file, "utf8");
      expect(text).toMatch(/^SU[A-Z2-7]{56}$/m);
      expect(text).not.toMatch(/S[OANCPX][A-Z2-7]{55}/);
    }
    expect(ensureAgentCreds(root.layout, "cm-n2")).toBe(false); // kept: a running agent's users stay valid
    expect(readAgentCreds(root.layout, "cm-n2")).toEqual(first);

    const auth = jwtOf(first.authority);
    expect(auth.name).toBe("cotal-agent-cm-n2");
    expect(auth.nats.issuer_account).toBe(loadAuthorityAccount(root.layout).publicKey);
    expect(auth.nats.pub).toEqual({ allow: agentAuthorityPub("cm-n2") });
    expect(auth.nats.sub).toEqual({ allow: ["_INBOX.>"] });
    expect(auth.exp).toBeUndefined();
    const sys = jwtOf(first.system);
    expect(sys.nats.issuer_account).toBe(loadBrokerTrust(root.layout).system.publicKey);
    expect(sys.nats.pub).toEqual({ allow: AGENT_SYSTEM_PUB });
  });

  it("may read the four buckets and write only its own proof key and the lease, never the record, the node material or a stream", () => {
    const pub = agentAuthorityPub("cm-n2");
    expect(pub).toEqual(
      expect.arrayContaining([
        "$JS.API.STREAM.MSG.GET.KV_cotal_node_material",
        "$JS.API.STREAM.MSG.GET.KV_cotal_broker_inventory",
        "$JS.API.STREAM.MSG.GET.KV_cotal_broker_cfgwriter",
        "$JS.API.STREAM.MSG.GET.KV_cotal_node_proofs",
      ]),
    );
    expect(pub.filter((s) => s.startsWith("$KV."))).toEqual(["$KV.cotal_node_proofs.node.cm-n2", "$KV.cotal_broker_cfgwriter.>"]);
    expect(agentAuthorityPub("cm-n3")).toContain("$KV.cotal_node_proofs.node.cm-n3");
    expect(pub.some((s) => /STREAM\.(CREATE|UPDATE|DELETE|PURGE)|\$JS\.API\.>|^>$/.test(s))).toBe(false);
    expect(AGENT_SYSTEM_PUB.every((s) => /^\$SYS\.REQ\.SERVER\.\*\.(RELOAD|VARZ|JSZ)$/.test(s))).toBe(true);
  });

  it("a pair minted with other permissions (an older cotal's record CAS) is minted again; a current pair is kept", async () => {
    const root = await threeHostRoot(roots);
    ensureAgentCreds(root.layout, "cm-n2", { ...GUARDS_ON, AGENT_CREDS_UNRESTRICTED: true });
    const old = readAgentCreds(root.layout, "cm-n2");
    expect(ensureAgentCreds(root.layout, "cm-n2")).toBe(true);
    const now = readAgentCreds(root.layout, "cm-n2");
    expect(now?.authority).not.toBe(old?.authority);
    expect(jwtOf(now?.authority ?? "").nats.pub).toEqual({ allow: agentAuthorityPub("cm-n2") });
    expect(ensureAgentCreds(root.layout, "cm-n2")).toBe(false);
  });

  it("with AGENT_CREDS_UNRESTRICTED, the authority user has no publish allow list (the ablation's switch)", async () => {
    const root = await threeHostRoot(roots);
    ensureAgentCreds(root.layout, "cm-n3", { ...GUARDS_ON, AGENT_CREDS_UNRESTRICTED: true });
    expect(jwtOf(readAgentCreds(root.layout, "cm-n3")?.authority ?? "").nats.pub).toBeUndefined();
  });
});

describe("a forgotten node's agent authority user", () => {
  it("is revoked in the authority account, re-signed by the operator, once; another node's user is untouched", async () => {
    const root = await threeHostRoot(roots);
    ensureAgentCreds(root.layout, "cm-n2");
    ensureAgentCreds(root.layout, "cm-n3");
    const key = credsUserKey(readFileSync(agentCredsFiles(root.layout, "cm-n2").authority, "utf8"));
    const other = credsUserKey(readFileSync(agentCredsFiles(root.layout, "cm-n3").authority, "utf8"));
    expect(key).toMatch(/^U[A-Z2-7]{55}$/);
    const before = loadAuthorityAccount(root.layout);
    expect(revokeAgentAuthority(root.layout, "cm-n2", 1_900_000_000)).toBe(key);
    const after = loadAuthorityAccount(root.layout);
    expect(userRevocations(after.jwt)).toEqual({ [key as string]: 1_900_000_000 });
    expect(userRevocations(after.jwt)[other as string]).toBeUndefined();
    expect(verifyJwt(after.jwt).iss).toBe(loadBrokerTrust(root.layout).operator.publicKey);
    expect({ ...after, jwt: "" }).toEqual({ ...before, jwt: "" }); // only the JWT moved
    // Again: nothing to add, nothing written.
    expect(revokeAgentAuthority(root.layout, "cm-n2", 1_900_000_000)).toBeUndefined();
    expect(loadAuthorityAccount(root.layout).jwt).toBe(after.jwt);
    // A node with no creds of its own has no user to revoke.
    expect(revokeAgentAuthority(root.layout, "cm-n9")).toBeUndefined();
    expect(credsUserKey("not a creds file")).toBeUndefined();
  });

  it("forget revokes its system user in the system account: re-signed by the operator, the keys and generation kept, idempotent", async () => {
    const root = await threeHostRoot(roots);
    for (const n of ["cm-n2", "cm-n3"]) ensureAgentCreds(root.layout, n);
    const key = credsUserKey(readFileSync(agentCredsFiles(root.layout, "cm-n2").system, "utf8"));
    const other = credsUserKey(readFileSync(agentCredsFiles(root.layout, "cm-n3").system, "utf8"));
    const before = loadBrokerTrust(root.layout);
    expect(revokeAgentSystem(root.layout, "cm-n2", 1_900_000_000)).toBe(key);
    const after = loadBrokerTrust(root.layout);
    expect(userRevocations(after.system.jwt)).toEqual({ [key as string]: 1_900_000_000 });
    expect(userRevocations(after.system.jwt)[other as string]).toBeUndefined();
    const claims = verifyJwt(after.system.jwt);
    expect([claims.iss, claims.sub]).toEqual([before.operator.publicKey, before.system.publicKey]);
    expect({ ...after, system: { ...after.system, jwt: "" } }).toEqual({ ...before, system: { ...before.system, jwt: "" } }); // only the JWT moved
    expect(revokeAgentSystem(root.layout, "cm-n2", 1_900_000_000)).toBeUndefined();
    expect(loadBrokerTrust(root.layout).system.jwt).toBe(after.system.jwt);
    expect(revokeAgentSystem(root.layout, "cm-n9")).toBeUndefined();
  });
});
