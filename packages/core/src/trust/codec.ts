/**
 * Byte encodings used by nkeys and NATS JWTs: RFC 4648 base32 without padding (nkeys, jti),
 * CRC-16/XMODEM (the nkeys checksum) and base64url without padding (JWT segments).
 * Hand-rolled because the nkeys/jwt packages are slow and we only need these few lines.
 */

const BASE32_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

// Reverse lookup for decoding; -1 marks characters outside the alphabet.
const BASE32_LOOKUP = (() => {
  const table = new Int8Array(128).fill(-1);
  for (let i = 0; i < BASE32_ALPHABET.length; i++) table[BASE32_ALPHABET.charCodeAt(i)] = i;
  return table;
})();

/** RFC 4648 base32, standard alphabet, no padding (Go's `base32.StdEncoding.WithPadding(NoPadding)`). */
export function base32Encode(bytes: Uint8Array): string {
  let out = "";
  let buffer = 0;
  let bits = 0;
  for (let i = 0; i < bytes.length; i++) {
    buffer = (buffer << 8) | (bytes[i] as number);
    bits += 8;
    while (bits >= 5) {
      bits -= 5;
      out += BASE32_ALPHABET[(buffer >>> bits) & 31];
    }
    buffer &= (1 << bits) - 1; // keep only the unread bits so the accumulator never overflows
  }
  if (bits > 0) out += BASE32_ALPHABET[(buffer << (5 - bits)) & 31];
  return out;
}

/** Inverse of {@link base32Encode}; returns undefined for characters outside the alphabet or impossible lengths. */
export function base32Decode(text: string): Uint8Array | undefined {
  // Unpadded base32 never ends with 1, 3 or 6 leftover characters.
  const rem = text.length % 8;
  if (rem === 1 || rem === 3 || rem === 6) return undefined;
  const out = new Uint8Array(Math.floor((text.length * 5) / 8));
  let buffer = 0;
  let bits = 0;
  let index = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    const value = code < 128 ? (BASE32_LOOKUP[code] as number) : -1;
    if (value < 0) return undefined;
    buffer = (buffer << 5) | value;
    bits += 5;
    if (bits >= 8) {
      bits -= 8;
      out[index++] = (buffer >>> bits) & 0xff;
    }
    buffer &= (1 << bits) - 1;
  }
  return out;
}

// CRC-16/XMODEM (poly 0x1021, init 0), as nkeys computes it; table-driven for speed.
const CRC16_TABLE = (() => {
  const table = new Uint16Array(256);
  for (let i = 0; i < 256; i++) {
    let crc = i << 8;
    for (let j = 0; j < 8; j++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    table[i] = crc;
  }
  return table;
})();

/** The nkeys checksum over `bytes` (stored little-endian after the payload). */
export function crc16(bytes: Uint8Array): number {
  let crc = 0;
  for (let i = 0; i < bytes.length; i++) {
    crc = ((crc << 8) & 0xffff) ^ (CRC16_TABLE[((crc >>> 8) ^ (bytes[i] as number)) & 0xff] as number);
  }
  return crc;
}

const BASE64URL = /^[A-Za-z0-9_-]*$/;

/** base64url without padding, as JWT segments use. */
export function base64UrlEncode(data: Uint8Array | string): string {
  return (typeof data === "string" ? Buffer.from(data, "utf8") : Buffer.from(data.buffer, data.byteOffset, data.byteLength)).toString(
    "base64url",
  );
}

/** Strict inverse of {@link base64UrlEncode}: Node's own decoder silently skips bad characters, so check first. */
export function base64UrlDecode(text: string): Buffer | undefined {
  if (!BASE64URL.test(text) || text.length % 4 === 1) return undefined;
  return Buffer.from(text, "base64url");
}
