/**
 * A systemd unit file read as systemd reads the parts cotal's tests need (systemd.syntax(7)):
 * `[Section]` headers, `Key=Value` lines, `#`/`;` comments, a trailing backslash continuing a line,
 * and a key given again adding a value (an empty assignment resets the list). Pure.
 */
export type UnitFile = Map<string, Map<string, string[]>>;

export function parseUnitFile(text: string): UnitFile {
  const unit: UnitFile = new Map();
  let section: Map<string, string[]> | undefined;
  const lines = text.replace(/\\\n/g, " ").split("\n");
  for (const raw of lines) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#") || line.startsWith(";")) continue;
    const header = /^\[([^\]]+)\]$/.exec(line);
    if (header) {
      section = unit.get(header[1] as string) ?? new Map<string, string[]>();
      unit.set(header[1] as string, section);
      continue;
    }
    const eq = line.indexOf("=");
    if (!section || eq <= 0) throw new Error(`not a unit-file line: ${JSON.stringify(raw)}`);
    const key = line.slice(0, eq).trim();
    const value = line.slice(eq + 1).trim();
    section.set(key, value === "" ? [] : [...(section.get(key) ?? []), value]);
  }
  return unit;
}

/** Every value of `key` in `section` (empty when absent). */
export function unitValues(unit: UnitFile, section: string, key: string): string[] {
  return unit.get(section)?.get(key) ?? [];
}

/** The last value of `key` (what a single-valued setting ends as), or undefined. */
export function unitValue(unit: UnitFile, section: string, key: string): string | undefined {
  return unitValues(unit, section, key).at(-1);
}

/** Space-separated list settings (After=, Wants=, RestrictAddressFamilies=...) flattened. */
export function unitList(unit: UnitFile, section: string, key: string): string[] {
  return unitValues(unit, section, key).flatMap((v) => v.split(/\s+/).filter(Boolean));
}

/** `Environment=` assignments as a record (unquoted `K=V` words only; cotal's units use no quoting). */
export function unitEnvironment(unit: UnitFile): Record<string, string> {
  const env: Record<string, string> = {};
  for (const word of unitList(unit, "Service", "Environment")) {
    const eq = word.indexOf("=");
    if (eq <= 0 || /["'\\]/.test(word)) throw new Error(`unsupported Environment= word: ${word}`);
    env[word.slice(0, eq)] = word.slice(eq + 1);
  }
  return env;
}

/**
 * The service's `ExecStart=` as argv. Only the plain form: no `-@:+!` prefixes, quotes, escapes or
 * `$`/`%` expansions, which this reader would get wrong (it refuses them rather than guess).
 */
export function unitExecStart(unit: UnitFile): string[] {
  const values = unitValues(unit, "Service", "ExecStart");
  if (values.length !== 1) throw new Error(`expected one ExecStart=, found ${values.length}`);
  const line = values[0] as string;
  if (/^[-@:+!]|["'\\$%]/.test(line)) throw new Error(`ExecStart= uses syntax this reader does not expand: ${line}`);
  return line.split(/\s+/);
}

/**
 * systemd's `Restart=on-failure` rule (systemd.service(5)): restart after a non-zero exit code, or a
 * death by a signal other than the clean ones (SIGHUP, SIGINT, SIGTERM, SIGPIPE); never after a stop
 * the supervisor itself asked for.
 */
export function restartsOnFailure(end: { code: number | null; signal: NodeJS.Signals | null; stopRequested: boolean }): boolean {
  if (end.stopRequested) return false;
  if (end.signal !== null) return !["SIGHUP", "SIGINT", "SIGTERM", "SIGPIPE"].includes(end.signal);
  return end.code !== 0;
}

/** Does systemd mark the unit failed? A non-zero exit or an unclean signal, a requested stop included. */
export function unitFailed(end: { code: number | null; signal: NodeJS.Signals | null }): boolean {
  if (end.signal !== null) return !["SIGHUP", "SIGINT", "SIGTERM", "SIGPIPE"].includes(end.signal);
  return end.code !== 0;
}
