/**
 * What `cotal status` says of the signing-key rotations in progress (docs/commands/space.md "space
 * rotate-key"): each staged rotation of a space that still has its record, its stage read from the
 * record, and the command that moves it on. Read-only; no seed leaves this module.
 */
import type { AccountRecord } from "../root/records.js";
import { listKeyRotations } from "../root/key-rotation.js";
import type { RootLayout } from "../root/layout.js";
import { rotationNext, rotationStage, staleRotation, type RotationStage } from "./space-rotate-key.js";

export interface KeyRotationStatus {
  space: string;
  stage: RotationStage;
  oldKey: string;
  newKey: string;
  startedAt: string;
  keepOldUntil?: string;
  /** keeping-old: by design until --finish; any other stage: a run was interrupted. */
  interrupted: boolean;
  next: string;
}

/** Pure over the records given: a rotation of a space with no record, or of an account since replaced (staleRotation), is not listed. */
export function keyRotationsOf(layout: RootLayout, spaces: readonly AccountRecord[]): KeyRotationStatus[] {
  const byName = new Map(spaces.map((s) => [s.name, s]));
  return listKeyRotations(layout).flatMap((r) => {
    const rec = byName.get(r.space);
    if (!rec || staleRotation(r, rec.jwt)) return [];
    const stage = rotationStage(r, rec);
    return [{ space: r.space, stage, oldKey: r.oldKey, newKey: r.newKey, startedAt: r.startedAt, ...(r.keepOldUntil ? { keepOldUntil: r.keepOldUntil } : {}), interrupted: stage !== "keeping-old", next: rotationNext(r.space, stage) }];
  });
}
