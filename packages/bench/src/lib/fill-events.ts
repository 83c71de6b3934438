import { randomBytes } from "node:crypto";
import { jetstream } from "@nats-io/jetstream";
import { connectAsAccount } from "@cotal/core/broker";
import { loadSpaceAccount } from "@cotal/core/root";
import type { RootLayout } from "@cotal/core";

/**
 * `size` MB of random 16 KiB events into a space's events stream, 256 publishes in flight (the
 * snapshot is s2-compressed: constant bytes would time the compressor, not the transfer).
 */
export async function fillEvents(url: string, layout: RootLayout, space: string, size: number): Promise<void> {
  const account = loadSpaceAccount(layout, space);
  if (!account) throw new Error(`no account ${space}`);
  const nc = await connectAsAccount(url, account, { name: `bench-fill-${space}` });
  const js = jetstream(nc);
  const pool = Array.from({ length: 64 }, () => randomBytes(16 * 1024));
  const acks = [];
  for (let i = 0; i < (size * 1024) / 16; i++) {
    acks.push(js.publish(`cotal.${space}.events.x`, pool[i % 64] ?? new Uint8Array(0)));
    if (acks.length >= 256) await Promise.all(acks.splice(0));
  }
  await Promise.all(acks);
  await nc.close();
}
