import { GUARDS_ON, type Guards } from "./guards.js";
import { CotalError } from "./errors.js";

/** The one rule for space names: it keeps names safe as file segments, subject tokens and stream names. */
export const SPACE_NAME_RULE = "1-64 characters of [a-z0-9_-], starting with a letter or digit";
const SPACE_NAME = /^[a-z0-9][a-z0-9_-]{0,63}$/;

export function isValidSpaceName(name: string): boolean {
  return SPACE_NAME.test(name);
}

/** Refuses before any write; the offending value is shown JSON-quoted so control characters stay visible. */
export function assertSpaceName(name: string, guards: Guards = GUARDS_ON): string {
  if ((typeof name !== "string" || !isValidSpaceName(name)) && !guards.SKIP_NAME_VALIDATION) {
    throw new CotalError("invalid-space-name", `invalid space name ${JSON.stringify(name)}: a space name is ${SPACE_NAME_RULE}`, {
      next: "choose a name like `team-a` or `tenant_42`",
      details: { name, rule: SPACE_NAME_RULE },
    });
  }
  return name;
}

/** File-system segment for a space: hex of its UTF-8 bytes, so no name can reach outside its directory. */
export function spaceHex(name: string): string {
  return Buffer.from(name, "utf8").toString("hex");
}

export function spaceFromHex(hex: string): string | undefined {
  if (!/^(?:[0-9a-f]{2})+$/.test(hex)) return undefined;
  const name = Buffer.from(hex, "hex").toString("utf8");
  return spaceHex(name) === hex ? name : undefined;
}

/** The token that names a space's streams and buckets (valid in stream, bucket and subject names). */
export function spaceToken(name: string): string {
  return name;
}
