import { performance } from "node:perf_hooks";
import { connectWithCreds } from "@cotal/core/broker";

/** Connects with `creds` and makes a round trip; throws what the server answered. */
export async function connectsOnce(url: string, creds: string): Promise<void> {
  const nc = await connectWithCreds(url, creds, { name: "bench-sample", reconnect: false });
  try {
    await nc.flush();
  } finally {
    await nc.close();
  }
}

const REFUSED = /authori[sz]ation|authentication|account/i;

/**
 * ms from `since` until a new connection with `creds` is refused by the server (an authorization error,
 * not a network one), polling every 5 ms; throws after `boundMs` or on any other error.
 */
export async function untilRefused(url: string, creds: string, since: number, boundMs = 30_000): Promise<number> {
  for (;;) {
    try {
      await connectsOnce(url, creds);
    } catch (e) {
      if (REFUSED.test((e as Error).message)) return performance.now() - since;
      throw e;
    }
    if (performance.now() - since > boundMs) throw new Error(`the removed tenant still connects after ${boundMs} ms`);
    await new Promise((r) => setTimeout(r, 5));
  }
}
