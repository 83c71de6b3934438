/** Bucket creation when several first connects race (docs/saga.md): an absent stream after a create is made again, never reported at once. */
import { JetStreamApiCodes, JetStreamApiError, StorageType, type StreamConfig, type StreamInfo } from "@nats-io/jetstream";
import type { KV } from "@nats-io/kv";
import { describe, expect, it } from "vitest";
import { ensureBucket, openExistingBucket, type BucketApi } from "../src/inventory/bucket.js";
import { isCotalError } from "../src/errors.js";

const notFound = () => new JetStreamApiError({ code: 404, err_code: JetStreamApiCodes.StreamNotFound, description: "stream not found" });
const storeFailed = () => new JetStreamApiError({ code: 500, err_code: 10077, description: "stream store failed" });

function shape(bucket: string): StreamConfig {
  return { name: `KV_${bucket}`, subjects: [`$KV.${bucket}.>`], storage: StorageType.File, max_msgs_per_subject: 1, allow_direct: false, max_age: 0, num_replicas: 1 } as StreamConfig;
}

/** A fake whose stream appears only after `createsBeforeItStays` creates, each earlier one refused as a rolled-back add is. */
function api(createsBeforeItStays: number): BucketApi & { creates: number } {
  let exists = false;
  const fake = {
    creates: 0,
    jsm: {
      streams: {
        info: async (name: string) => {
          if (!exists) throw notFound();
          return { config: shape(name.slice(3)) } as StreamInfo;
        },
      },
    },
    kvm: {
      create: async () => {
        fake.creates += 1;
        if (fake.creates < createsBeforeItStays) throw storeFailed();
        exists = true;
        return {} as KV;
      },
      open: async () => ({ bound: true }) as unknown as KV,
    },
  };
  return fake as BucketApi & { creates: number };
}

describe("ensureBucket", () => {
  it("a stream still missing after a refused create is created again and then opened", async () => {
    const fake = api(3);
    await expect(ensureBucket(fake, { bucket: "b", ttlMs: 0 }, 2_000)).resolves.toEqual({ bound: true });
    expect(fake.creates).toBe(3);
  });

  it("an existing bucket is opened without a create", async () => {
    const fake = api(1);
    await ensureBucket(fake, { bucket: "b", ttlMs: 0 });
    await ensureBucket(fake, { bucket: "b", ttlMs: 0 });
    expect(fake.creates).toBe(1);
  });

  it("past the settle time it refuses inventory-unreachable naming the server's last answer and its code", async () => {
    const fake = api(Number.MAX_SAFE_INTEGER);
    const err = await ensureBucket(fake, { bucket: "b", ttlMs: 0 }, 120).catch((e: unknown) => e);
    expect(isCotalError(err) && err.code).toBe("inventory-unreachable");
    expect(String((err as Error).message)).toMatch(/KV_b is still missing after create \(the server last answered: stream store failed\)/);
    expect((err as { details?: { errCode?: number } }).details?.errCode).toBe(10077);
    expect((err as { next?: string }).next).toBeTruthy();
    expect(fake.creates).toBeGreaterThan(1);
  });

  it("a reader opens an existing bucket and never creates an absent one (openExistingBucket)", async () => {
    const fake = api(1);
    await expect(openExistingBucket(fake, { bucket: "b", ttlMs: 0 })).resolves.toBeUndefined();
    expect(fake.creates).toBe(0);
    await ensureBucket(fake, { bucket: "b", ttlMs: 0 });
    await expect(openExistingBucket(fake, { bucket: "b", ttlMs: 0 })).resolves.toEqual({ bound: true });
    const err = await openExistingBucket(fake, { bucket: "b", ttlMs: 0, replicas: 3 }).catch((e: unknown) => e);
    expect(isCotalError(err, "inventory-corrupt")).toBe(true); // the shape check still holds
    expect(fake.creates).toBe(1);
  });
});
