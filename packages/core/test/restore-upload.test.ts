import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { NoRespondersError, RequestError, type NatsConnection } from "@nats-io/transport-node";
import { afterEach, describe, expect, it } from "vitest";
import { isCotalError } from "../src/errors.js";
import { restoreStream } from "../src/backup/stream-snapshot.js";

const enc = new TextEncoder();
const reply = (body: string | Uint8Array) => {
  const data = typeof body === "string" ? enc.encode(body) : body;
  return { data, json: <T>() => JSON.parse(new TextDecoder().decode(data)) as T };
};
const STATE = { messages: 1, bytes: 1, first_seq: 1, last_seq: 1, consumer_count: 0 };

/**
 * A connection that answers the restore request, records every chunk it is sent and how many were
 * unanswered at that moment, and acks each chunk (or refuses chunk `refuse`) a tick later.
 */
function fakeServer(refuse?: number, deaf: (index: number) => boolean = () => false) {
  const chunks: Buffer[] = [];
  let open = 0;
  let maxOpen = 0;
  let finished = false;
  let deafTries = 0;
  const nc = {
    info: { max_payload: 1024 * 1024 },
    request: async (subject: string, data: Uint8Array) => {
      if (subject.startsWith("$JS.API.STREAM.RESTORE.")) return reply(JSON.stringify({ deliver_subject: "restore.deliver" }));
      if (data.length === 0) {
        finished = true;
        return reply(JSON.stringify({ state: STATE }));
      }
      if (deaf(chunks.length + 1)) {
        deafTries++;
        throw new RequestError("no responders", { cause: new NoRespondersError(subject) });
      }
      chunks.push(Buffer.from(data));
      const index = chunks.length;
      maxOpen = Math.max(maxOpen, ++open);
      await new Promise((r) => setTimeout(r, 1));
      open--;
      return index === refuse ? reply(JSON.stringify({ error: { code: 500, description: "insufficient storage resources" } })) : reply(new Uint8Array(0));
    },
  } as unknown as NatsConnection;
  return { nc, chunks, maxOpen: () => maxOpen, finished: () => finished, deafTries: () => deafTries };
}

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
function snapshotFile(bytes: number): { file: string; content: Buffer } {
  const dir = mkdtempSync(join(tmpdir(), "cotal-upload-"));
  dirs.push(dir);
  const content = Buffer.from(Array.from({ length: bytes }, (_, i) => i % 251));
  writeFileSync(join(dir, "s.snap"), content);
  return { file: join(dir, "s.snap"), content };
}

describe("the restore upload (stream-snapshot.ts, restoreStream)", () => {
  it("sends every byte in order with at most `inFlight` chunks unacknowledged", async () => {
    const { file, content } = snapshotFile(10 * 1024 + 5);
    const s = fakeServer();
    let acked = 0;
    const got = await restoreStream(s.nc, file, { stream: "S", config: {}, state: STATE }, (n) => (acked += n), { chunkSize: 1024, inFlight: 3 });
    expect(got.state).toEqual(STATE);
    expect(Buffer.concat(s.chunks).equals(content)).toBe(true);
    expect(s.chunks).toHaveLength(11);
    expect(s.maxOpen()).toBe(3);
    expect(acked).toBe(content.length);
    expect(s.finished()).toBe(true);
  });

  it("one chunk per round trip with inFlight 1", async () => {
    const { file } = snapshotFile(4096);
    const s = fakeServer();
    await restoreStream(s.nc, file, { stream: "S", config: {}, state: STATE }, () => undefined, { chunkSize: 1024, inFlight: 1 });
    expect(s.maxOpen()).toBe(1);
  });

  it("a chunk the server refuses stops the upload with snapshot-failed and never sends the final empty chunk", async () => {
    const { file } = snapshotFile(20 * 1024);
    const s = fakeServer(2);
    const err = await restoreStream(s.nc, file, { stream: "S", config: {}, state: STATE }, () => undefined, { chunkSize: 1024, inFlight: 2 }).then(() => undefined, (e: unknown) => e);
    expect(isCotalError(err) && err.code).toBe("snapshot-failed");
    expect((err as Error).message).toContain("insufficient storage resources");
    expect(s.chunks.length).toBeLessThan(20); // stopped within a window of the refusal
    expect(s.finished()).toBe(false);
  });

  it("the first chunk is sent again while the deliver subject has no responders yet (its interest still crossing a route), then the window resumes", async () => {
    const { file, content } = snapshotFile(8 * 1024);
    let deafFor = 3;
    const s = fakeServer(undefined, (index) => index === 1 && deafFor-- > 0);
    await restoreStream(s.nc, file, { stream: "S", config: {}, state: STATE }, () => undefined, { chunkSize: 1024, inFlight: 3 });
    expect(s.deafTries()).toBe(3);
    expect(Buffer.concat(s.chunks).equals(content)).toBe(true);
    expect(s.maxOpen()).toBe(3);
    expect(s.finished()).toBe(true);
  });

  it("no responders after the first chunk was acked is a lost upload: snapshot-failed, nothing sent again, no final chunk", async () => {
    const { file } = snapshotFile(8 * 1024);
    const s = fakeServer(undefined, (index) => index === 3);
    const err = await restoreStream(s.nc, file, { stream: "S", config: {}, state: STATE }, () => undefined, { chunkSize: 1024, inFlight: 1 }).then(() => undefined, (e: unknown) => e);
    expect(isCotalError(err) && err.code).toBe("snapshot-failed");
    expect((err as Error).message).toContain("not acknowledged");
    expect(s.deafTries()).toBe(1);
    expect(s.finished()).toBe(false);
  });
});
