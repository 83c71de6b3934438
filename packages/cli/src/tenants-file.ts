import { readFileSync } from "node:fs";
import { usageError } from "@cotal/core/errors";

/** One space name per line; blank lines and `#` comments are skipped. Names are validated by the saga. */
export function readTenantsFile(path: string): string[] {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    throw usageError(`cannot read ${path}: ${(err as Error).message}`, "cotal space add --from tenants.txt   # one name per line");
  }
  return text
    .split("\n")
    .map((l) => l.replace(/#.*$/, "").trim())
    .filter((l) => l.length > 0);
}
