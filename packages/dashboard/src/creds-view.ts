import { readFileSync } from "node:fs";
import type { SpaceInfo } from "@cotal/core";
import { decodeJwt, parseCreds } from "@cotal/core/trust";

/** A creds file under the root as `cotal space info` lists it. */
export type SpaceCredsFile = SpaceInfo["creds"][number];

/** A creds file under the root as the page shows it: who, when minted, when it expires. Never its seed. */
export interface CredsView {
  user: string;
  kind: SpaceCredsFile["kind"];
  path: string;
  /** The JWT's `iat` and `exp` (ISO); `expiresAt` null: it never expires. */
  issuedAt: string | null;
  expiresAt: string | null;
  /** valid, expired, or why the file could not be read. */
  status: "valid" | "expired" | "unreadable";
  error?: string;
}

const iso = (seconds: number): string => new Date(seconds * 1000).toISOString();

/** Pure: the view of one creds file's text; the seed block is parsed and dropped here, never returned. */
export function credsViewOf(file: SpaceCredsFile, text: string, now = new Date()): CredsView {
  try {
    const claims = decodeJwt(parseCreds(text).jwt);
    const expired = claims.exp !== undefined && claims.exp * 1000 <= now.getTime();
    return { user: file.user, kind: file.kind, path: file.path, issuedAt: iso(claims.iat), expiresAt: claims.exp === undefined ? null : iso(claims.exp), status: expired ? "expired" : "valid" };
  } catch (err) {
    return { user: file.user, kind: file.kind, path: file.path, issuedAt: null, expiresAt: null, status: "unreadable", error: (err as Error).message };
  }
}

/** Each creds file `cotal space info` lists for the space, read and decoded. */
export function readCredsViews(files: readonly SpaceCredsFile[], now = new Date()): CredsView[] {
  return files.map((f) => {
    let text: string;
    try {
      text = readFileSync(f.path, "utf8");
    } catch (err) {
      return { user: f.user, kind: f.kind, path: f.path, issuedAt: null, expiresAt: null, status: "unreadable", error: (err as NodeJS.ErrnoException).code ?? (err as Error).message };
    }
    return credsViewOf(f, text, now);
  });
}
