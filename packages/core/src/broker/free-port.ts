import { createServer, type Server } from "node:net";

function listenOnZero(host: string): Promise<Server> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.once("error", reject);
    srv.listen({ host, port: 0, exclusive: true }, () => resolve(srv));
  });
}

function portOf(srv: Server): number {
  const addr = srv.address();
  if (addr === null || typeof addr === "string") throw new Error("listening socket has no TCP address");
  return addr.port;
}

function close(srv: Server): Promise<void> {
  return new Promise((resolve) => srv.close(() => resolve()));
}

/**
 * A port the kernel just handed out on `host`. Racy by nature (another process may take it before
 * the server binds), so a caller that picks one retries a start that fails with "address in use".
 */
export async function freePort(host = "127.0.0.1"): Promise<number> {
  const srv = await listenOnZero(host);
  try {
    return portOf(srv);
  } finally {
    await close(srv);
  }
}

/** `n` distinct free ports: every listener stays open until all are read, so none repeats. */
export async function freePorts(n: number, host = "127.0.0.1"): Promise<number[]> {
  const servers: Server[] = [];
  try {
    for (let i = 0; i < n; i++) servers.push(await listenOnZero(host));
    return servers.map(portOf);
  } finally {
    await Promise.all(servers.map(close));
  }
}
