import { describe, expect, it } from "vitest";
import { afterPid, describeError, errorDocument, nameRoot, renderRerun, RERUN, rerunWith, CotalError, usageError } from "../src/internal.js";

const KEYS = ["code", "details", "exit", "message", "next", "retriable"];

describe("the one JSON error shape", () => {
  it("a CotalError keeps its code, message, next and details; exit and retriability come from the table", () => {
    const e = new CotalError("lock-held", "the root is locked by pid 7", { next: "wait for pid 7", details: { pid: 7 } });
    const doc = errorDocument(e);
    expect(Object.keys(doc.error).sort()).toEqual(KEYS);
    expect(doc).toEqual({ error: { code: "lock-held", message: "the root is locked by pid 7", next: "wait for pid 7", exit: 4, retriable: true, details: { pid: 7 } } });
  });

  it("a CotalError without a next gets its code's default, and null where the table has none", () => {
    expect(describeError(new CotalError("divergence", "disk and KV differ")).next).toBe("cotal broker reconcile");
    const bare = describeError(new CotalError("quota-overcommit", "too big"));
    expect(bare).toEqual({ code: "quota-overcommit", message: "too big", next: null, exit: 3, retriable: false, details: null });
  });

  it("a usage error exits 2 and points at --help unless it names its own next", () => {
    expect(describeError(usageError("unknown option --frob"))).toEqual({ code: "usage", message: "unknown option --frob", next: "cotal --help", exit: 2, retriable: false, details: null });
    expect(describeError(usageError("bad port", "cotal up --port 4222")).next).toBe("cotal up --port 4222");
  });

  it("a coded error from another copy of the module (a bundle, a test runner) is still itself; a look-alike class by name is not", () => {
    const other = Object.assign(new Error("no space x"), { code: "space-not-found", [Symbol.for("cotal.error")]: true });
    expect(describeError(other).code).toBe("space-not-found");
    class LookAlike extends Error {
      override readonly name = "CotalError";
      readonly code = "space-not-found";
    }
    expect(describeError(new LookAlike("no space x")).code).toBe("internal");
  });

  it("an OS file error is io (exit 8) with its errno, path and a hint, never a stack", () => {
    const fsErr = Object.assign(new Error("EACCES: permission denied, open '/r/auth/broker.json'"), { code: "EACCES", errno: -13, syscall: "open", path: "/r/auth/broker.json" });
    const e = describeError(fsErr);
    expect(Object.keys(e).sort()).toEqual(KEYS);
    expect(e).toMatchObject({ code: "io", message: "open failed on /r/auth/broker.json: EACCES", exit: 8, retriable: true, details: { errno: "EACCES", path: "/r/auth/broker.json" } });
    expect(e.next).toMatch(/permissions/);
  });

  it("anything else is internal (exit 1), including an error whose code merely looks like one of ours", () => {
    expect(describeError(new TypeError("x is undefined"))).toEqual({ code: "internal", message: "x is undefined", next: "COTAL_DEBUG=1 <the same command>   # and report its output", exit: 1, retriable: true, details: null });
    expect(describeError(Object.assign(new Error("nats timeout"), { code: "timeout" })).code).toBe("internal");
    expect(describeError("a thrown string").message).toBe("a thrown string");
  });

  it("prints the failed command itself where a next says to run it again", () => {
    const e = new CotalError("conflict", "moved", { next: `${RERUN}   # re-reads and re-decides` });
    expect(describeError(e, { rerun: "cotal space add 'a b' --root /r" }).next).toBe("cotal space add 'a b' --root /r   # re-reads and re-decides");
    expect(describeError(e).next).toBe("<the same command>   # re-reads and re-decides");
    expect(describeError(new CotalError("lock-held", "busy", { next: afterPid(42) }), { rerun: "cotal down" }).next).toBe("while kill -0 42 2>/dev/null; do sleep 1; done; cotal down");
    expect(describeError(new CotalError("conflict", "moved"), { rerun: "cotal up" }).next).toBe("cotal up");
  });

  it("rides alongside a command's own document", () => {
    const doc = errorDocument(new CotalError("confirmation-required", "add --yes"), { report: { state: "diverged" } });
    expect(doc.report).toEqual({ state: "diverged" });
    expect(doc.error.exit).toBe(3);
  });
});

describe("printed commands keep the operator's flags (rerunWith, renderRerun)", () => {
  const argv = ["--root", "/srv/cotal root", "space", "add", "beta", "--max-disk", "1GiB", "--max-conns=9", "--limits", "--json"];
  it("RERUN prints the failed command whole, each word quoted as the shell reads it back", () => {
    const e = describeError(new CotalError("conflict", "x", { next: `${RERUN}   # again` }), { argv });
    expect(e.next).toBe("cotal --root '/srv/cotal root' space add beta --max-disk 1GiB --max-conns=9 --limits --json   # again");
  });

  it("rerunWith replaces a flag's value where it stands, in either spelling, and keeps every other flag", () => {
    const e = describeError(new CotalError("quota-overcommit", "x", { next: rerunWith({ "--max-disk": "512MiB", "--max-conns": "4" }) }), { argv });
    expect(e.next).toBe("cotal --root '/srv/cotal root' space add beta --max-disk 512MiB --max-conns 4 --limits --json");
  });

  it("rerunWith adds an absent flag at the end, a bare one with true, and drops one with null", () => {
    expect(renderRerun(argv, { "--out": "/b/x.1" })).toBe("cotal --root '/srv/cotal root' space add beta --max-disk 1GiB --max-conns=9 --limits --json --out /b/x.1");
    expect(renderRerun(argv, { "--yes": true, "--json": null, "--limits": null })).toBe("cotal --root '/srv/cotal root' space add beta --max-disk 1GiB --max-conns=9 --yes");
    expect(renderRerun(["space", "rm", "a", "--yes"], { "--yes": true })).toBe("cotal space rm a --yes");
  });

  it("without the CLI's argv a token still names a command: the fixed rerun, else a marker", () => {
    expect(describeError(new CotalError("conflict", "x", { next: rerunWith({ "--a": "b" }) }), { rerun: "cotal jobs status" }).next).toBe("cotal jobs status");
    expect(describeError(new CotalError("conflict", "x", { next: RERUN }), {}).next).toBe("<the same command>");
  });
});

describe("nameRoot: every printed cotal command names the root", () => {
  it("adds --root to each cotal command that has none, keeps the ones that do, leaves other commands and the comment alone", () => {
    expect(nameRoot("cotal up   # lifts it", "/r")).toBe("cotal --root /r up   # lifts it");
    expect(nameRoot("cotal up --detach && cotal space rm b", "/a b")).toBe("cotal --root '/a b' up --detach && cotal --root '/a b' space rm b");
    expect(nameRoot("cotal up --detach --root /x && cotal --root=/y status; cotal down", "/r")).toBe("cotal up --detach --root /x && cotal --root=/y status; cotal --root /r down");
    expect(nameRoot("while kill -0 7 2>/dev/null; do sleep 1; done; cotal space add g", "/r")).toBe("while kill -0 7 2>/dev/null; do sleep 1; done; cotal --root /r space add g");
    expect(nameRoot("mkdir -p /b && cotal status   # see cotal up", "/r")).toBe("mkdir -p /b && cotal --root /r status   # see cotal up");
    expect(nameRoot("bash infra/redis.sh start", "/r")).toBe("bash infra/redis.sh start");
  });

  it("a reported error's next names the context's root", () => {
    expect(describeError(new CotalError("journal-blocked", "x", { next: "cotal space rm b   # finishes it" }), { root: "/r" }).next).toBe("cotal --root /r space rm b   # finishes it");
  });
});
