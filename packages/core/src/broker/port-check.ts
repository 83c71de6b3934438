import { execFileSync } from "node:child_process";
import { createServer } from "node:net";
import { rerunWith, CotalError } from "../errors.js";
import { freePort } from "./free-port.js";

/** Whether `host:port` can be bound now (the way nats-server will bind it: exclusive, no reuse). */
export function portBindable(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.unref();
    srv.once("error", () => resolve(false));
    srv.listen({ host, port, exclusive: true }, () => srv.close(() => resolve(true)));
  });
}

/** Who listens on `port`, as `ss` names it (`nats-server pid 123`), when ss can say. */
export function portHolder(port: number): string | undefined {
  try {
    const out = execFileSync("ss", ["-Hltnp", `sport = :${port}`], { encoding: "utf8", timeout: 2_000, stdio: ["ignore", "pipe", "ignore"] });
    const m = /users:\(\("([^"]+)",pid=(\d+)/.exec(out);
    return m ? `${m[1]} pid ${m[2]}` : undefined;
  } catch {
    return undefined;
  }
}

/**
 * `up` refuses a listener it cannot bind before it writes anything or starts a server (issue #31):
 * port-in-use names the address and its holder, and the next re-runs the command on a free port.
 */
export async function assertPortFree(host: string, port: number): Promise<void> {
  if (await portBindable(host, port)) return;
  const holder = portHolder(port);
  const free = await freePort(host);
  throw new CotalError("port-in-use", `${host}:${port} is already in use${holder ? ` by ${holder}` : ""}; nothing was started`, {
    next: `${rerunWith({ "--port": String(free) })}   # a free port now; or stop what holds ${port} (ss -ltnp 'sport = :${port}')`,
    details: { host, port, ...(holder ? { holder } : {}), suggestion: free },
  });
}
