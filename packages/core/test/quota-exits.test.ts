import { describe, expect, it } from "vitest";
import { describeError } from "../src/entries/errors.js";
import { assertQuotaUsable, assertWithinBudget, DEFAULT_SPACE_QUOTA, MIN_SPACE_DISK, parseQuota, resolveQuota, sizeFlagValue, type JetStreamBudget, type SpaceQuota } from "../src/internal.js";

// Issue #28, finding 7: a quota refusal's printed `next` keeps every flag of the refused command and
// never leads back to the same refusal. Each case runs the printed line against the same checks the
// verbs run (assertQuotaUsable, then assertWithinBudget) until it succeeds.

const MiB = 1024 ** 2;
const ROOT = "/srv/cotal root";

type Holders = Map<string, SpaceQuota>;

interface World {
  budget: JetStreamBudget;
  holders: Holders;
  /** `--limits FILE` contents by path. */
  files?: Record<string, Record<string, unknown>>;
}

const FLAG_FIELD: Record<string, keyof SpaceQuota> = { "--max-disk": "disk", "--max-mem": "mem", "--max-streams": "streams", "--max-consumers": "consumers", "--max-conns": "conns", "--max-subs": "subs", "--max-payload": "payload", "--max-leafnodes": "leafnodes" };

/** Splits a POSIX line the way renderRerun quotes it (bare words and single quotes). */
function words(line: string): string[] {
  const out: string[] = [];
  for (const m of line.matchAll(/'((?:[^']|'\\'')*)'|(\S+)/g)) out.push(m[1] !== undefined ? m[1].replace(/'\\''/g, "'") : (m[2] as string));
  return out;
}

/** argv after `cotal`, without the root (printed first, as `--root <abs>`). */
function argvOf(cmd: string): string[] {
  const w = words(cmd);
  expect(w[0]).toBe("cotal");
  const rest = w.slice(1);
  if (rest[0] === "--root") {
    expect(rest[1]).toBe(ROOT);
    return rest.slice(2);
  }
  return rest;
}

function quotaOf(args: readonly string[], files: World["files"]): { names: string[]; quota: Partial<SpaceQuota> } {
  const names: string[] = [];
  const flags: Record<string, string> = {};
  let fromFile: Partial<SpaceQuota> = {};
  for (let i = 0; i < args.length; i++) {
    const a = args[i] as string;
    if (a === "--limits") fromFile = parseQuota(files?.[args[++i] as string] ?? {}, "file");
    else if (FLAG_FIELD[a]) flags[FLAG_FIELD[a]] = args[++i] as string;
    else names.push(a);
  }
  return { names, quota: { ...fromFile, ...parseQuota(flags, "flags") } };
}

/** One cotal command as the verbs check it; throws their refusal, else applies it to `w`. */
function run(w: World, argv: readonly string[]): void {
  const [verb, sub, ...rest] = argv;
  if (verb === "space" && sub === "list") return;
  const { names, quota } = quotaOf(rest, w.files);
  if (verb === "space" && sub === "add") {
    const q = resolveQuota(quota);
    for (const n of names) assertQuotaUsable(n, q);
    const fresh = names.filter((n) => !w.holders.has(n));
    const kept = [...w.holders].map(([name, h]) => holder(name, h));
    assertWithinBudget(w.budget, kept, fresh.map((n) => holder(n, q)), { root: ROOT });
    for (const n of fresh) w.holders.set(n, q);
    return;
  }
  if (verb === "space" && sub === "limits") {
    const name = names[0] as string;
    const q = resolveQuota(quota, w.holders.get(name));
    assertQuotaUsable(name, q);
    const kept = [...w.holders].filter(([n]) => n !== name).map(([n, h]) => holder(n, h));
    assertWithinBudget(w.budget, kept, [holder(name, q)], { root: ROOT });
    w.holders.set(name, q);
    return;
  }
  throw new Error(`the test cannot run ${argv.join(" ")}`);
}

function holder(name: string, q: SpaceQuota) {
  return { name, limits: { disk_storage: q.disk, mem_storage: q.mem } };
}

/** Runs a printed line as a shell would: each `&&` part in turn; the comment after `#` only explains. */
function runLine(w: World, line: string): void {
  for (const part of (line.split("   #")[0] as string).split(" && ")) run(w, argvOf(part.trim()));
}

/**
 * Runs `argv`, then every printed `next` in turn: it must end in success, each refusal's line
 * different from every one before (no loop). Returns the lines printed.
 */
function followToSuccess(w: World, argv: string[]): string[] {
  const printed: string[] = [];
  let line: string | undefined;
  for (let step = 0; step < 4; step++) {
    try {
      if (line === undefined) run(w, argv);
      else runLine(w, line);
      return printed;
    } catch (err) {
      const shape = describeError(err, { argv: ["--root", ROOT, ...argv] });
      expect(shape.next, shape.message).toBeTruthy();
      expect(printed, `the printed line loops: ${shape.next}`).not.toContain(shape.next);
      printed.push(shape.next as string);
      line = shape.next as string;
    }
  }
  throw new Error(`no success after ${printed.length} printed lines:\n${printed.join("\n")}`);
}

const budget = (fileMiB: number, reserveMiB = 16, memMiB = 64, reserveMemMiB = 8): JetStreamBudget => ({ maxFileStore: fileMiB * MiB, reserveFile: reserveMiB * MiB, maxMemoryStore: memMiB * MiB, reserveMemory: reserveMemMiB * MiB });
const q = (disk: number, mem = DEFAULT_SPACE_QUOTA.mem): SpaceQuota => ({ ...DEFAULT_SPACE_QUOTA, disk, mem });

describe("quota-overcommit: the printed next is the refused command, lowered to fit", () => {
  it("keeps every other flag (--max-conns, --limits, the root) and the re-run fits", () => {
    const w: World = { budget: budget(116), holders: new Map([["alpha", q(64 * MiB)]]), files: { "/tmp/l.json": { subs: 77 } } };
    const argv = ["space", "add", "beta", "--max-disk", "200M", "--max-conns", "5", "--limits", "/tmp/l.json"];
    const printed = followToSuccess(w, argv);
    expect(printed).toHaveLength(1);
    expect(printed[0]).toMatch(/^cotal --root '\/srv\/cotal root' space add beta --max-disk 36M --max-conns 5 --limits \/tmp\/l\.json {3}#/);
    expect(w.holders.get("beta")).toMatchObject({ disk: 36 * MiB, conns: 5, subs: 77 });
  });

  it("lowers disk and memory together when both are over, and splits a batch's room", () => {
    const w: World = { budget: budget(116, 16, 64, 8), holders: new Map([["alpha", q(40 * MiB, 16 * MiB)]]) };
    const printed = followToSuccess(w, ["space", "add", "b1", "b2", "b3", "--max-disk", "100M", "--max-mem", "30M", "--max-streams", "9"]);
    expect(printed).toHaveLength(1);
    expect(printed[0]).toContain(`--max-disk ${sizeFlagValue(Math.floor((60 * MiB) / 3))} --max-mem ${sizeFlagValue(Math.floor((40 * MiB) / 3))} --max-streams 9`);
    expect(w.holders.get("b3")).toMatchObject({ streams: 9 });
  });

  it("space limits: raising past the budget prints the same limits command lowered, --max-conns kept", () => {
    const w: World = { budget: budget(216), holders: new Map([["alpha", q(64 * MiB)], ["beta", q(64 * MiB)]]) };
    const printed = followToSuccess(w, ["space", "limits", "beta", "--max-disk", "1G", "--max-conns", "9"]);
    expect(printed[0]).toMatch(/^cotal --root '\/srv\/cotal root' space limits beta --max-disk 136M --max-conns 9 /);
    expect(w.holders.get("beta")).toMatchObject({ disk: 136 * MiB, conns: 9 });
  });

  it("with less than the least quota (1 MiB) left, frees it from the space with the most quota, then runs the command as asked", () => {
    const free = MIN_SPACE_DISK / 2;
    const w: World = { budget: { ...budget(0), maxFileStore: 16 * MiB + 94 * MiB + free, reserveFile: 16 * MiB }, holders: new Map([["alpha", q(64 * MiB)], ["gamma", q(30 * MiB)]]) };
    const printed = followToSuccess(w, ["space", "add", "beta", "--max-disk", "10M", "--max-conns", "7"]);
    expect(printed).toHaveLength(1);
    expect(printed[0]).toMatch(/^cotal --root '\/srv\/cotal root' space limits alpha --max-disk 54M && cotal --root '\/srv\/cotal root' space add beta --max-disk 10M --max-conns 7 {3}#/);
    expect(printed[0]).not.toMatch(/--max-disk (0|1048576)\b/);
    expect(w.holders.get("beta")).toMatchObject({ disk: 10 * MiB, conns: 7 });
    expect(w.holders.get("alpha")?.disk).toBe(54 * MiB);
  });

  it("when no space can give the request as asked, asks for the least quota after freeing that", () => {
    const w: World = { budget: { ...budget(0), maxFileStore: 16 * MiB + 6 * MiB, reserveFile: 16 * MiB }, holders: new Map([["alpha", q(3 * MiB)], ["gamma", q(3 * MiB)]]) };
    const printed = followToSuccess(w, ["space", "add", "beta", "--max-disk", "64M"]);
    expect(printed[0]).toMatch(/space limits alpha --max-disk 2M && cotal --root '\/srv\/cotal root' space add beta --max-disk 1M /);
    expect(w.holders.get("beta")?.disk).toBe(MIN_SPACE_DISK);
  });

  it("when every space sits at the least quota, prints the figures (space list), never a value refused again", () => {
    const w: World = { budget: { ...budget(0), maxFileStore: 16 * MiB + 2 * MiB, reserveFile: 16 * MiB }, holders: new Map([["alpha", q(MiB)], ["gamma", q(MiB)]]) };
    const printed = followToSuccess(w, ["space", "add", "beta", "--max-disk", "2M"]);
    expect(printed).toHaveLength(1);
    expect(printed[0]).toMatch(/^cotal --root '\/srv\/cotal root' space list {3}# .*raise jetstream\.maxFileStore/);
    expect(w.holders.has("beta")).toBe(false);
  });
});

describe("unusable quotas: the printed next fixes every bad field and keeps the rest", () => {
  it("fixes disk and conns together, keeps --max-subs and the names", () => {
    const w: World = { budget: budget(1024 * 1024), holders: new Map() };
    const printed = followToSuccess(w, ["space", "add", "a", "b", "--max-disk", "1K", "--max-conns", "0", "--max-subs", "9"]);
    expect(printed).toHaveLength(1);
    expect(printed[0]).toMatch(/^cotal --root '\/srv\/cotal root' space add a b --max-disk 1048576 --max-conns 128 --max-subs 9 /);
    expect(w.holders.get("b")).toMatchObject({ disk: MiB, conns: 128, subs: 9 });
  });
});

describe("sizeFlagValue", () => {
  it.each([[3 * 1024 ** 3, "3G"], [1536 * MiB, "1536M"], [MiB + 5, "1M"], [2048 + 7, "2K"], [900, "900"]])("%d bytes → %s (never more)", (n, text) => {
    expect(sizeFlagValue(n)).toBe(text);
    expect(parseQuota({ disk: text }, "x").disk).toBeLessThanOrEqual(n);
  });
});
