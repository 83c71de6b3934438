import { isValidSpaceName, SPACE_NAME_RULE } from "@cotal/saga";
import { z } from "zod";
import { CotalError } from "@cotal/saga/errors";
import type { JobType } from "./names.js";

const spaceName = z.string().refine(isValidSpaceName, { message: `a space name is ${SPACE_NAME_RULE}` });
const rootPath = z.string().min(1).refine((p) => p.startsWith("/"), { message: "root must be an absolute path" });

/** Every payload names its root: a worker refuses a job for a root it does not serve. */
export const spaceAddPayload = z.strictObject({ root: rootPath, name: spaceName });
export const spaceRmPayload = z.strictObject({ root: rootPath, name: spaceName });
// `every`: the cadence as the operator gave it, so a failed run can print the command that re-schedules it (absent in older schedules).
export const spaceBackupPayload = z.strictObject({ root: rootPath, name: spaceName, out: z.string().min(1), keep: z.number().int().positive().optional(), every: z.string().min(1).optional() });
export const spaceRestorePayload = z
  .strictObject({ root: rootPath, name: spaceName, from: z.string().min(1), rebindAccount: z.boolean().optional(), replace: z.boolean().optional(), yes: z.boolean().optional() })
  .refine((p) => !p.replace || p.yes === true, { message: "replace deletes the space's streams first: it needs yes", path: ["yes"] });

export type SpaceAddPayload = z.infer<typeof spaceAddPayload>;
export type SpaceRmPayload = z.infer<typeof spaceRmPayload>;
export type SpaceBackupPayload = z.infer<typeof spaceBackupPayload>;
export type SpaceRestorePayload = z.infer<typeof spaceRestorePayload>;

export const PAYLOADS = {
  "space-add": spaceAddPayload,
  "space-rm": spaceRmPayload,
  "space-backup": spaceBackupPayload,
  "space-restore": spaceRestorePayload,
} as const satisfies Record<JobType, z.ZodType>;

export interface PayloadOf {
  "space-add": SpaceAddPayload;
  "space-rm": SpaceRmPayload;
  "space-backup": SpaceBackupPayload;
  "space-restore": SpaceRestorePayload;
}

/** Validates one payload; a refusal names the job type and every issue. */
export function parsePayload<T extends JobType>(type: T, data: unknown): PayloadOf[T] {
  const r = PAYLOADS[type].safeParse(data);
  if (!r.success) {
    const issues = r.error.issues.map((i) => `${i.path.join(".") || "(payload)"}: ${i.message}`);
    throw new CotalError("invalid-payload", `invalid ${type} payload: ${issues.join("; ")}`, { details: { type, issues } });
  }
  return r.data as PayloadOf[T];
}
