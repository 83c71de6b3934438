import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { CotalError, isCotalError, renderRerun } from "@cotal/core/errors";
import { isValidSpaceName } from "@cotal/core/light";
import type { Command } from "commander";
import { rootOf } from "../context.js";
import { json, out } from "../output.js";

export interface VerifiedStream {
  name: string;
  file: string;
  messages: number;
  bytes: number;
  firstSeq: number | null;
  lastSeq: number | null;
  /** A live snapshot may also hold messages up to this sequence (docs/backup.md). */
  grewTo: number | null;
  size: number;
  sha256: string;
  verified: true;
}

export interface VerifyReport {
  valid: true;
  artifact: string;
  format: string;
  space: string;
  accountPublicKey: string;
  createdAt: string;
  consistency: "cross-stream" | "per-stream";
  streams: VerifiedStream[];
  excluded: string[];
  files: number;
  bytes: number;
}

/** The artifact's space as its manifest names it, when the manifest is readable at all (for a runnable next). */
function claimedSpace(dir: string): string | undefined {
  try {
    const space = (JSON.parse(readFileSync(join(dir, "manifest.json"), "utf8")) as { space?: unknown }).space;
    return typeof space === "string" && isValidSpaceName(space) ? space : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The refusal with a `next` this command can run: the path is positional here, so a suggested
 * artifact is verified by name, and a damaged one is replaced by a fresh backup of its space.
 */
function withVerifyNext(err: unknown, root: string, dir: string): unknown {
  if (!isCotalError(err)) return err;
  const suggestion = err.details?.suggestion;
  if (typeof suggestion === "string") return new CotalError(err.code, err.message, { next: `${renderRerun(["--root", root, "backup", "verify", suggestion])}   # the newest complete artifact beside it`, details: err.details ?? {}, cause: err });
  const space = err.code === "artifact-invalid" ? claimedSpace(dir) : undefined;
  if (space) return new CotalError(err.code, err.message, { next: `${renderRerun(["--root", root, "space", "backup", space, "--out", `${dir}.fresh`])}   # this one cannot be restored: take a fresh backup`, details: err.details ?? {}, cause: err });
  return err;
}

/** `cotal backup verify DIR`: verifyArtifact (manifest shape, every pinned file's size and sha256), read-only. */
export async function verifyReport(dir: string): Promise<VerifyReport> {
  const [{ checkRestoreFrom }, { verifyArtifact }] = await Promise.all([import("@cotal/core"), import("@cotal/core/backup")]);
  const abs = checkRestoreFrom(dir);
  const { manifest: m } = verifyArtifact(abs);
  const pinned = new Map(m.files.map((f) => [f.path, f]));
  return {
    valid: true,
    artifact: abs,
    format: m.format,
    space: m.space,
    accountPublicKey: m.accountPublicKey,
    createdAt: m.createdAt,
    consistency: m.consistency ?? "cross-stream",
    streams: m.streams.map((s) => ({
      name: s.name,
      file: s.file,
      messages: s.state.messages,
      bytes: s.state.bytes,
      firstSeq: s.state.first_seq ?? null,
      lastSeq: s.state.last_seq ?? null,
      grewTo: s.grewTo ?? null,
      size: pinned.get(s.file)?.size ?? 0,
      sha256: pinned.get(s.file)?.sha256 ?? "",
      verified: true,
    })),
    excluded: m.excluded.map((e) => e.name),
    files: m.files.length,
    bytes: m.files.reduce((n, f) => n + f.size, 0),
  };
}

function printReport(r: VerifyReport): void {
  out(`cotal: ${r.artifact} is a valid backup of space ${r.space} (account ${r.accountPublicKey}), taken ${r.createdAt}, ${r.consistency}; ${r.files} file(s), ${r.bytes} bytes, every size and sha256 as pinned`);
  for (const s of r.streams) {
    const range = s.messages === 0 ? "empty" : `seq ${s.firstSeq ?? "?"}..${s.lastSeq ?? "?"}`;
    out(`  ${s.name.padEnd(32)} ${String(s.messages).padStart(8)} messages, ${range}${s.grewTo !== null ? ` (up to ${s.grewTo} written during its live snapshot)` : ""}; ${s.file} ${s.size} bytes verified`);
  }
  if (r.excluded.length > 0) out(`  excluded (ttl, recreated empty on restore): ${r.excluded.join(", ")}`);
}

export function registerArtifact(program: Command): void {
  const backup = program.commands.find((c) => c.name() === "backup") ?? program.command("backup").description("backup artifacts, checked without restoring them");
  backup
    .command("verify <dir>")
    .description("check a backup artifact without restoring it: the manifest's shape and every pinned file's size and sha256; prints the space, its account key and each stream")
    .option("--json", "print the report as JSON")
    .action(async (dir: string, flags: { json?: boolean }, cmd: Command) => {
      let r: VerifyReport;
      try {
        r = await verifyReport(dir);
      } catch (err) {
        throw withVerifyNext(err, rootOf(cmd), resolve(dir));
      }
      if (flags.json) return json(r);
      printReport(r);
    });
}
