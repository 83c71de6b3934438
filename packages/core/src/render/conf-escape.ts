import { CotalError } from "../errors.js";

/**
 * Quotes a value for nats-server's config format. Only `\\` and `"` need escaping inside a quoted
 * string; control characters are refused outright so nothing user-supplied can start a new key.
 */
export function confString(value: string, what: string): string {
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(value)) {
    throw new CotalError("render-refused", `${what} contains a control character; refusing to render it into server.conf`, {
      details: { what },
    });
  }
  return `"${value.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`;
}

/** Account keys and JWTs are base32/base64url; anything else in those slots is a forged record. */
export function confToken(value: string, what: string, pattern: RegExp): string {
  if (!pattern.test(value)) throw new CotalError("render-refused", `${what} is not well-formed; refusing to render it`, { details: { what } });
  return value;
}

export const ACCOUNT_KEY = /^A[A-Z2-7]{55}$/;
export const JWT_TEXT = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;
