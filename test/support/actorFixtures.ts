/** Small helpers the actor-level tests share: a replayable generator and segments built from one filter each. */
import { Effect } from "effect"
import type { Condition } from "../../src/domain/conditions/types.ts"
import { Segments } from "../../src/store/Segments.ts"

/** A small deterministic generator, so a failure can be replayed. */
export const prng = (seed: number) => () => {
  seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648
  return seed / 2_147_483_648
}

/** A condition of one filter. */
export const one = (filter: Record<string, unknown>): Condition => ({ logic: "AND", groups: [{ filters: [filter] }] } as unknown as Condition)

/** Creates a project's dynamic segments that track membership (entry/exit events). */
export const segmentCreator = (projectId: string) =>
  Effect.map(Effect.service(Segments), (segments) => (name: string, condition: Condition) =>
    segments.create(projectId, { name, description: null, type: "DYNAMIC", condition, trackMembership: true }))
