import { describe, expect, it } from "vitest";
import { createKeyPair, redactSeeds } from "../../src/internal.js";

describe("redactSeeds", () => {
  it("masks real seeds of every role, and leaves public keys alone", () => {
    for (const role of ["user", "account", "operator"] as const) {
      const kp = createKeyPair(role);
      expect(redactSeeds(`seed=${kp.seed} key=${kp.publicKey}`)).toBe(`seed=[seed redacted] key=${kp.publicKey}`);
    }
  });

  it("masks a seed glued to an escape or a lowercase word (a JSON log line's \\n, a creds file body)", () => {
    const seed = createKeyPair("user").seed;
    expect(redactSeeds(`{"creds":"-----BEGIN USER NKEY SEED-----\\n${seed}\\n"}`)).toBe('{"creds":"-----BEGIN USER NKEY SEED-----\\n[seed redacted]\\n"}');
    expect(redactSeeds(`x${seed}y`)).toBe("x[seed redacted]y");
  });
});
