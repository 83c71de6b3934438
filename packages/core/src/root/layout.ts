import { join, resolve } from "node:path";
import { spaceHex } from "../names.js";
import { canonicalRoot } from "./canonical-root.js";

/** Where a root lives: `--root`, then the entry's `COTAL_ROOT`, then `./.cotal`; always its canonical path. */
export function resolveRoot(explicit: string | undefined, env: Readonly<Record<string, string | undefined>>): string {
  return canonicalRoot(resolve(explicit ?? env.COTAL_ROOT ?? ".cotal"));
}

/** Every path cotal reads or writes under a root, in one place (docs/lifecycle.md "The root"). */
export class RootLayout {
  constructor(readonly root: string) {}

  get authDir(): string { return join(this.root, "auth"); }
  get brokerFile(): string { return join(this.authDir, "broker.json"); }
  get brokerSecretsDir(): string { return join(this.authDir, "broker.secrets"); }
  get operatorSeedFile(): string { return join(this.brokerSecretsDir, "operator.seed"); }
  get systemSigningSeedFile(): string { return join(this.brokerSecretsDir, "system-signing.seed"); }
  /** A rotation's staged successor trust (seeds included), written before any live trust file changes. */
  get successorTrustFile(): string { return join(this.brokerSecretsDir, "successor.json"); }
  get authorityFile(): string { return join(this.authDir, "authority.json"); }
  accountFile(space: string): string { return join(this.authDir, `account.${spaceHex(space)}.json`); }

  get settingsFile(): string { return join(this.root, "settings.json"); }
  get serverConf(): string { return join(this.root, "server.conf"); }
  /** server.conf.<g>.<lease tag>: two writers staging the same generation never touch each other's file. */
  stagedConf(generation: number, leaseId: string): string { return join(this.root, `server.conf.${generation}.${leaseId.replace(/[^A-Za-z0-9]/g, "").slice(0, 12)}`); }
  get storeDir(): string { return join(this.root, "nats"); }

  get maintenanceDir(): string { return join(this.root, "maintenance"); }
  get lockFile(): string { return join(this.maintenanceDir, "lock.json"); }
  get journalFile(): string { return join(this.maintenanceDir, "journal.json"); }

  get runDir(): string { return join(this.root, "run"); }
  get pidFile(): string { return join(this.runDir, "nats-server.pid"); }
  get runtimeFile(): string { return join(this.runDir, "broker.json"); }
  get logDir(): string { return join(this.root, "logs"); }
  get logFile(): string { return join(this.logDir, "nats-server.log"); }
  get stdioLogFile(): string { return join(this.logDir, "nats-server.stdio.log"); }

  /** One cluster node's own files (`cotal up --cluster N`, docs/cluster.md); a single-broker root has none. */
  get nodesDir(): string { return join(this.root, "nodes"); }
  nodeDir(node: string): string { return join(this.nodesDir, node); }
  nodeServerConf(node: string): string { return join(this.nodeDir(node), "server.conf"); }
  /** A node's next config, beside its server.conf (one file system for the rename); `tag` keeps two writers' files apart. */
  nodeStagedConf(node: string, tag: string): string { return join(this.nodeDir(node), `server.conf.next.${tag.replace(/[^A-Za-z0-9]/g, "").slice(0, 24)}`); }
  nodeStoreDir(node: string): string { return join(this.nodeDir(node), "store"); }
  nodeLogFile(node: string): string { return join(this.nodeDir(node), "log", "nats-server.log"); }
  nodeStdioLogFile(node: string): string { return join(this.nodeDir(node), "log", "nats-server.stdio.log"); }
  nodePidFile(node: string): string { return join(this.nodeDir(node), "nats-server.pid"); }
  /** `cotal node run`'s last state for this node (maintenance or serving), for `cotal status`. */
  nodeAgentStateFile(node: string): string { return join(this.nodeDir(node), "agent.json"); }
  /** The running `cotal node run`'s owner file for this node: one agent a node (ops/node-agent.ts). */
  nodeAgentLockFile(node: string): string { return join(this.nodeDir(node), "agent.lock"); }
  /** The agent's own users (root/agent-creds.ts): what its host holds instead of the root's account seeds. */
  nodeAgentCredsDir(node: string): string { return join(this.nodeDir(node), "agent"); }
  /** The node's own runtime record, on its own host (broker/runtime.ts writeNodeRuntime): its agent finds its server there, not in a shared run/broker.json. */
  nodeRuntimeFile(node: string): string { return join(this.nodeDir(node), "runtime.json"); }

  spaceDir(space: string): string { return join(this.root, `space.${spaceHex(space)}`); }
  /** Pid files of processes that serve one space (daemons a deployment runs per tenant). */
  spaceRunDir(space: string): string { return join(this.spaceDir(space), "run"); }
  userCredsFile(space: string, user: string): string { return join(this.spaceDir(space), "users", `${user}.creds`); }
  sysCredsFile(space: string, kind: "observer" | "evictor"): string { return join(this.spaceDir(space), `sys.${kind}.creds`); }
}
