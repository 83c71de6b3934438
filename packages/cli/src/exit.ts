/**
 * Exit once stdout and stderr have reached the OS. A pipe takes 64 KiB at once and Node queues the
 * rest; `process.exit` would drop it (a 1,001-space `status --json` reached its reader empty).
 * docs/refusals.md, "Bounded time".
 */
export async function exitFlushed(code: number): Promise<never> {
  await Promise.all([flushed(process.stdout), flushed(process.stderr)]);
  process.exit(code);
}

function flushed(stream: NodeJS.WriteStream): Promise<void> {
  if (stream.writableLength === 0) return Promise.resolve();
  // writes complete in order, so an empty write's callback fires after everything before it; a reader
  // that left (EPIPE) also ends the wait
  return new Promise((resolve) => stream.write("", () => resolve()));
}
