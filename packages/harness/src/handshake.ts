import { connect as tcpConnect } from "node:net";
import type { Authenticator } from "@nats-io/transport-node";

/**
 * The NATS connect handshake and nothing else (docs: nats-server client protocol): read the
 * server's INFO, answer its nonce with CONNECT (jwt, nkey, signature) and PING, and wait for the
 * server's verdict: PONG = authenticated, -ERR = refused. The same bytes a client sends at connect,
 * without a client's subscriptions, timers and reconnect machinery, so one attempt costs a tenth of
 * a nats.js connect+close and a poller can probe a credential thousands of times a second.
 */
export interface HandshakeTarget {
  host: string;
  port: number;
}

/** What nats.js calls with the nonce (nativeCredsAuthenticator for creds): its fields go into CONNECT. */
export type HandshakeSigner = Authenticator;

/** Refusal or failure of one handshake; `name` follows nats.js' error classes so reports read alike. */
export class HandshakeError extends Error {
  constructor(
    override readonly name: "AuthorizationError" | "ProtocolError" | "ConnectionError" | "TimeoutError",
    message: string,
  ) {
    super(message);
  }
}

/** nats://host:port (or host:port) to a TCP target; the port defaults to 4222 as in every client. */
export function handshakeTarget(url: string): HandshakeTarget {
  const u = new URL(url.includes("://") ? url : `nats://${url}`);
  return { host: u.hostname.replace(/^\[(.*)\]$/, "$1"), port: u.port ? Number(u.port) : 4222 };
}

/** The text inside `-ERR '...'`, as nats.js reports it. */
function serverError(line: string): HandshakeError {
  const text = line.slice(4).trim().replace(/^'(.*)'$/, "$1");
  return new HandshakeError(/authorization violation/i.test(text) ? "AuthorizationError" : "ProtocolError", text);
}

/** Resolves with the server's name (its INFO's `server_name`) once it answered CONNECT+PING with PONG; rejects with the server's -ERR or the socket's error. */
export function handshake(target: HandshakeTarget, sign: HandshakeSigner, opts: { name: string; timeoutMs: number }): Promise<string | undefined> {
  return new Promise<string | undefined>((resolve, reject) => {
    const socket = tcpConnect({ host: target.host, port: target.port, noDelay: true });
    let buffered = "";
    let sentConnect = false;
    let settled = false;
    let server: string | undefined;
    const finish = (err?: Error): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      if (err) reject(err);
      else resolve(server);
    };
    const timer = setTimeout(() => finish(new HandshakeError("TimeoutError", "timeout")), opts.timeoutMs);
    const onLine = (line: string): void => {
      if (!sentConnect) {
        if (!line.startsWith("INFO ")) return finish(new HandshakeError("ProtocolError", `expected INFO, got ${JSON.stringify(line.slice(0, 40))}`));
        const info = JSON.parse(line.slice(5)) as { nonce?: string; tls_required?: boolean; server_name?: string };
        server = info.server_name;
        if (info.tls_required) return finish(new HandshakeError("ProtocolError", "the server requires TLS; the handshake probe speaks plain TCP"));
        const connect = { verbose: false, pedantic: false, protocol: 1, lang: "cotal-poller", version: "1", name: opts.name, ...sign(info.nonce) };
        socket.write(`CONNECT ${JSON.stringify(connect)}\r\nPING\r\n`);
        sentConnect = true;
      } else if (line === "PONG") finish();
      else if (line.startsWith("-ERR")) finish(serverError(line));
      else if (line === "PING") socket.write("PONG\r\n");
      // +OK and INFO updates change nothing here
    };
    socket.setEncoding("utf8");
    socket.on("data", (chunk: string) => {
      buffered += chunk;
      for (let i = buffered.indexOf("\r\n"); i >= 0 && !settled; i = buffered.indexOf("\r\n")) {
        const line = buffered.slice(0, i);
        buffered = buffered.slice(i + 2);
        try {
          onLine(line);
        } catch (e) {
          finish(new HandshakeError("ProtocolError", `unreadable server line: ${(e as Error).message}`));
        }
      }
    });
    socket.on("error", (e: NodeJS.ErrnoException) => finish(new HandshakeError("ConnectionError", e.code === "ECONNREFUSED" ? "connection refused" : e.message)));
    socket.on("close", () => finish(new HandshakeError("ConnectionError", "connection closed before the server answered")));
  });
}
