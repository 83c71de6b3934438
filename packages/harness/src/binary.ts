// One lookup and one version read for the whole repo, the core's (@cotal/core/server-process): a bad
// NATS_SERVER_BIN is the same typed refusal (`nats-server-missing`, naming the path) here as in cotal.
import { natsServerBinary as coreBinary, natsServerVersion as coreVersion, type ServerVersion } from "@cotal/core/server-process";
export { parseServerVersion, versionAtLeast, type ServerVersion } from "@cotal/core/server-process";

/** The nats-server the harness runs; async so a failure arrives as a rejection, like every start. */
export async function natsServerBinary(): Promise<string> {
  return coreBinary();
}

/** The version `bin --version` prints; cached per binary path by the core. */
export async function natsServerVersion(bin: string): Promise<ServerVersion> {
  return coreVersion(bin);
}
