import { pidAlive } from "../lock/process-identity.js";

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * SIGTERM, then SIGKILL once `graceMs` passed; resolves once the process is gone. `forced` says
 * whether it needed the SIGKILL. `gone` (a child's own exit flag) answers sooner than polling the
 * pid, which for a child of ours stays visible until Node reaps it.
 */
export async function stopProcess(pid: number, graceMs: number, gone: () => boolean = () => !pidAlive(pid)): Promise<{ forced: boolean }> {
  // 0 and 1 are never a server of ours: kill(0) is our own process group (a node known only from settings records 0).
  if (!Number.isInteger(pid) || pid < 2) return { forced: false };
  try {
    process.kill(pid, "SIGTERM");
  } catch {
    return { forced: false };
  }
  const deadline = Date.now() + graceMs;
  while (!gone() && Date.now() < deadline) await sleep(10);
  if (gone()) return { forced: false };
  try {
    process.kill(pid, "SIGKILL");
  } catch {
    // gone in between
  }
  while (!gone()) await sleep(10);
  return { forced: true };
}
