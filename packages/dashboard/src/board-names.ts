// How the dashboard names this root's queues on Bull Board and links to them (docs/commands/dashboard.md
// "Bull Board"): the verb, readable; the Redis names (packages/jobs names.ts) stay as they are.

/** The queue's short name on the board (its side menu, its URL): the verb as the CLI spells it, `space add`, `space rotate-key`. Pure. */
export function queueMenuName(type: string): string {
  return type.replace("-", " ");
}

/** The queue's title on the board (its page header, its card): the verb and the root it serves, not the hashed key. Pure. */
export function queueDisplayName(type: string, root: string): string {
  return `${queueMenuName(type)} (root ${root})`;
}

/** Pure: a queue's page on the board, relative to the dashboard's root (`queues/queue/space%20add`), with a status tab when given. */
export function boardQueueHref(type: string, status?: "failed" | "waiting" | "delayed" | "active"): string {
  return `queues/queue/${encodeURIComponent(queueMenuName(type))}${status ? `?status=${status}` : ""}`;
}
