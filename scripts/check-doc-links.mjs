#!/usr/bin/env node
// Every relative link of the repository's Markdown pages points at a file that exists, and every
// `#anchor` at a heading of that file (GitHub's slug rule). Prints each broken link; exits 1 if any.
// Usage: node scripts/check-doc-links.mjs [file.md…]   (default: every tracked *.md outside node_modules)
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

const repo = resolve(dirname(new URL(import.meta.url).pathname), "..");
const files = process.argv.length > 2
  ? process.argv.slice(2).map((f) => resolve(f))
  : execFileSync("git", ["ls-files", "--cached", "--others", "--exclude-standard", "*.md"], { cwd: repo, encoding: "utf8" })
      .split("\n")
      .filter((f) => f && !f.includes("node_modules/"))
      .map((f) => join(repo, f));

/** The text outside fenced code blocks and inline code spans, where links are links. */
function prose(text) {
  let inFence = false;
  return text
    .split("\n")
    .map((line) => {
      if (/^\s*(```|~~~)/.test(line)) {
        inFence = !inFence;
        return "";
      }
      return inFence ? "" : line.replace(/(`+)[^`]*?\1/g, "");
    })
    .join("\n");
}

/** GitHub's heading anchor: lower case, punctuation dropped, spaces to dashes, repeats numbered. */
function anchors(file) {
  const seen = new Map();
  const out = new Set();
  let inFence = false;
  for (const line of readFileSync(file, "utf8").split("\n")) {
    if (/^\s*(```|~~~)/.test(line)) inFence = !inFence;
    const m = !inFence && /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const base = m[1]
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, "")
      .replace(/\s/g, "-");
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

let broken = 0;
for (const file of files) {
  const text = prose(readFileSync(file, "utf8"));
  for (const m of text.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
    const link = m[1];
    if (/^[a-z][a-z0-9+.-]*:/i.test(link)) continue; // http:, https:, mailto:
    const [path, anchor] = link.split("#", 2);
    const target = path === "" ? file : resolve(dirname(file), decodeURIComponent(path));
    const where = relative(repo, file);
    if (!existsSync(target)) {
      console.log(`${where}: ${link}: no such file`);
      broken++;
      continue;
    }
    if (anchor !== undefined && anchor !== "" && statSync(target).isFile() && target.endsWith(".md") && !anchors(target).has(anchor)) {
      console.log(`${where}: ${link}: no heading #${anchor} in ${relative(repo, target)}`);
      broken++;
    }
  }
}
console.log(`check-doc-links: ${files.length} file(s), ${broken} broken link(s)`);
process.exit(broken === 0 ? 0 : 1);
