import { isValidSpaceName, SPACE_NAME_RULE } from "@cotal/core/light";
import { z } from "zod";
import { CotalError } from "@cotal/core/errors";
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

/** `space revoke`: exactly one of a user name and a user key; `before` in unix seconds (default: when the job runs). */
export const spaceRevokePayload = z
  .strictObject({
    root: rootPath,
    name: spaceName,
    user: spaceName.optional(),
    key: z.string().regex(/^U[A-Z2-7]{55}$/, { message: "a user public key is U and 55 base32 characters" }).optional(),
    before: z.number().int().positive().optional(),
    force: z.boolean().optional(),
  })
  .refine((p) => (p.user === undefined) !== (p.key === undefined), { message: "name exactly one of user and key", path: ["user"] })
  .refine((p) => !p.force || p.key !== undefined, { message: "force goes with key only", path: ["force"] });

/** `space rotate-key`: `keepOld` (seconds) keeps the old key until a later `finish`; one of them at most. */
export const spaceRotateKeyPayload = z
  .strictObject({ root: rootPath, name: spaceName, keepOld: z.number().int().positive().optional(), finish: z.boolean().optional() })
  .refine((p) => !(p.finish && p.keepOld !== undefined), { message: "keepOld starts a rotation and finish ends one: name one of them", path: ["finish"] });

export type SpaceAddPayload = z.infer<typeof spaceAddPayload>;
export type SpaceRmPayload = z.infer<typeof spaceRmPayload>;
export type SpaceBackupPayload = z.infer<typeof spaceBackupPayload>;
export type SpaceRestorePayload = z.infer<typeof spaceRestorePayload>;
export type SpaceRevokePayload = z.infer<typeof spaceRevokePayload>;
export type SpaceRotateKeyPayload = z.infer<typeof spaceRotateKeyPayload>;

export const PAYLOADS = {
  "space-add": spaceAddPayload,
  "space-rm": spaceRmPayload,
  "space-backup": spaceBackupPayload,
  "space-restore": spaceRestorePayload,
  "space-revoke": spaceRevokePayload,
  "space-rotate-key": spaceRotateKeyPayload,
} as const satisfies Record<JobType, z.ZodType>;

export interface PayloadOf {
  "space-add": SpaceAddPayload;
  "space-rm": SpaceRmPayload;
  "space-backup": SpaceBackupPayload;
  "space-restore": SpaceRestorePayload;
  "space-revoke": SpaceRevokePayload;
  "space-rotate-key": SpaceRotateKeyPayload;
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
