import { PassThrough } from "node:stream";

/** A stream that says it is a terminal (120 columns), as stderr does under a person; `text()` is all it got. */
export function fakeTty(): { stream: NodeJS.WritableStream; text: () => string } {
  const s = new PassThrough() as PassThrough & { isTTY: boolean; columns: number };
  s.isTTY = true;
  s.columns = 120;
  let text = "";
  s.on("data", (c: Buffer) => (text += c.toString()));
  return { stream: s, text: () => text };
}
