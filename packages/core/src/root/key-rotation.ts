/**
 * A space's signing-key rotation in progress (`cotal space rotate-key`, docs/commands/space.md): the
 * new key and its seed, staged before the account JWT changes, so a re-run finishes exactly this
 * rotation. One file a space under auth/broker.secrets/key-rotations/ (0600 in 0700: it holds a
 * seed); removed once the old key is out of the account JWT.
 */
import { readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { isValidSpaceName, spaceHex } from "../names.js";
import { isPublicKey, keyPairFromSeed } from "../trust/nkeys.js";
import type { RootLayout } from "./layout.js";
import { ensureSecretDir, fsyncDir, readTextIfExists, writeJsonAtomic } from "./secret-files.js";

export interface KeyRotation {
  format: "cotal.key-rotation/1";
  space: string;
  /** The signing key being retired (public). */
  oldKey: string;
  newKey: string;
  newSeed: string;
  startedAt: string;
  /** `--keep-old`: the old key stays in the account JWT until `--finish` (status names it); ISO, the end of the grace the operator asked for. */
  keepOldUntil?: string;
  /** Set once cotal's own creds of the space (users/*.creds under the root) are signed by the new key. */
  reminted?: boolean;
}

export function keyRotationsDir(layout: RootLayout): string {
  return join(layout.brokerSecretsDir, "key-rotations");
}

export function keyRotationFile(layout: RootLayout, space: string): string {
  return join(keyRotationsDir(layout), `${spaceHex(space)}.json`);
}

/** Pure: the rotation in `text`, or undefined when it is not one (a torn or foreign file). */
export function parseKeyRotation(text: string | undefined): KeyRotation | undefined {
  if (text === undefined) return undefined;
  try {
    const r = JSON.parse(text) as Partial<KeyRotation>;
    if (r.format !== "cotal.key-rotation/1" || typeof r.space !== "string" || !isValidSpaceName(r.space)) return undefined;
    if (typeof r.oldKey !== "string" || !isPublicKey(r.oldKey, "account") || typeof r.newKey !== "string" || typeof r.newSeed !== "string") return undefined;
    if (keyPairFromSeed(r.newSeed).publicKey !== r.newKey || typeof r.startedAt !== "string") return undefined;
    if (r.keepOldUntil !== undefined && Number.isNaN(Date.parse(r.keepOldUntil))) return undefined;
    return r as KeyRotation;
  } catch {
    return undefined;
  }
}

export function readKeyRotation(layout: RootLayout, space: string): KeyRotation | undefined {
  return parseKeyRotation(readTextIfExists(keyRotationFile(layout, space)));
}

export function writeKeyRotation(layout: RootLayout, rotation: KeyRotation): void {
  ensureSecretDir(keyRotationsDir(layout));
  writeJsonAtomic(keyRotationFile(layout, rotation.space), rotation);
}

export function clearKeyRotation(layout: RootLayout, space: string): void {
  rmSync(keyRotationFile(layout, space), { force: true });
  try {
    fsyncDir(keyRotationsDir(layout));
  } catch {
    // no directory: nothing was there
  }
}

/** Every rotation on disk (status): one directory read, the unreadable files left out. */
export function listKeyRotations(layout: RootLayout): KeyRotation[] {
  let names: string[];
  try {
    names = readdirSync(keyRotationsDir(layout)).filter((n) => /^[0-9a-f]+\.json$/.test(n)).sort();
  } catch {
    return [];
  }
  return names.flatMap((n) => parseKeyRotation(readTextIfExists(join(keyRotationsDir(layout), n))) ?? []);
}
