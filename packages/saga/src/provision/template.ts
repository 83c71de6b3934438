import { spaceToken } from "../names.js";

/** How a resource is treated by backup: durable data is snapshotted, TTL/lease state is recreated empty. */
export type ResourceClass = "durable" | "ttl";

export interface TemplateStream {
  name: string;
  subjects: string[];
  class: ResourceClass;
  description: string;
}

export interface TemplateBucket {
  bucket: string;
  history: number;
  /** Milliseconds; 0 keeps entries forever. */
  ttlMs: number;
  class: ResourceClass;
  description: string;
}

export interface SpaceTemplate {
  streams: TemplateStream[];
  buckets: TemplateBucket[];
}

/** The default streams and buckets every space gets, named with the space token. */
export function spaceTemplate(space: string): SpaceTemplate {
  const t = spaceToken(space);
  return {
    streams: [
      { name: `cotal_events_${t}`, subjects: [`cotal.${t}.events.>`], class: "durable", description: `events of space ${space}` },
    ],
    buckets: [
      { bucket: `cotal_state_${t}`, history: 5, ttlMs: 0, class: "durable", description: `key/value state of space ${space}` },
      { bucket: `cotal_presence_${t}`, history: 1, ttlMs: 30_000, class: "ttl", description: `presence leases of space ${space}` },
    ],
  };
}

/** KV buckets are streams named KV_<bucket>; backup and rm need the stream names. */
export function templateStreamNames(space: string): string[] {
  const tpl = spaceTemplate(space);
  return [...tpl.streams.map((s) => s.name), ...tpl.buckets.map((b) => `KV_${b.bucket}`)];
}
