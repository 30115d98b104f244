/**
 * The one check of a condition tree against a project, for every place that accepts conditions
 * (segments, campaign audiences, workflow CONDITION steps): the tree is well formed, every
 * `segment.<id>` it reads is a segment of this project, and segments do not reference themselves,
 * directly or through others. Event filters written with the bare event name come back as
 * `event.<name>` (domain/conditions/canonical.ts): what callers store is always the canonical tree.
 */
import { Context, Effect, Layer } from "effect"
import { canonicalCondition } from "../domain/conditions/canonical.ts"
import type { Condition } from "../domain/conditions/types.ts"
import { conditionReads, type ConditionProblem, validateCondition } from "../domain/conditions/validate.ts"
import { Segments } from "./Segments.ts"
import { mapSqlError, type PersistenceError } from "./PersistenceError.ts"

export type CheckedCondition =
  | { readonly _tag: "valid"; readonly condition: Condition }
  | { readonly _tag: "invalid"; readonly problems: ReadonlyArray<ConditionProblem & { readonly received?: string }> }

export class ConditionCheck extends Context.Service<ConditionCheck, {
  /**
   * Shape and references; `path` prefixes the problems' paths (`condition`, `audienceCondition`). A
   * valid tree comes back in its canonical form.
   */
  readonly check: (
    projectId: string,
    input: unknown,
    path: string,
    options?: { readonly segmentId?: string }
  ) => Effect.Effect<CheckedCondition, PersistenceError>
  /** References only, for trees validated by a caller with rules of its own (workflow steps). */
  readonly references: (
    projectId: string,
    condition: Condition,
    path: string,
    options?: { readonly segmentId?: string }
  ) => Effect.Effect<CheckedCondition, PersistenceError>
}>()("app/store/ConditionCheck") {
  static readonly layer = Layer.effect(
    ConditionCheck,
    Effect.gen(function*() {
      const segments = yield* Segments

      const references = Effect.fn("ConditionCheck.references")(function*(
        projectId: string,
        condition: Condition,
        path: string,
        options?: { readonly segmentId?: string }
      ) {
        const referenced = [...conditionReads(condition).segments]
        if (referenced.length === 0) return { _tag: "valid", condition } as CheckedCondition
        const byId = new Map((yield* segments.list(projectId)).map((segment) => [segment.id, segment]))
        const unknown = referenced.filter((id) => !byId.has(id))
        if (unknown.length > 0) {
          return {
            _tag: "invalid",
            problems: unknown.map((id) => ({
              path,
              message: `Segment ${id} does not exist in this project`,
              code: "unknown_segment",
              received: id
            }))
          } as CheckedCondition
        }
        const self = options?.segmentId
        if (self) {
          const seen = new Set<string>()
          const stack = [...referenced]
          while (stack.length > 0) {
            const id = stack.pop()!
            if (id === self) {
              return {
                _tag: "invalid",
                problems: [{ path, message: "Segments cannot reference themselves, directly or through others", code: "cycle" }]
              } as CheckedCondition
            }
            if (seen.has(id)) continue
            seen.add(id)
            const target = byId.get(id)
            if (target?.condition) stack.push(...conditionReads(target.condition).segments)
          }
        }
        return { _tag: "valid", condition } as CheckedCondition
      }, mapSqlError)

      const check = Effect.fn("ConditionCheck.check")(function*(
        projectId: string,
        input: unknown,
        path: string,
        options?: { readonly segmentId?: string }
      ) {
        const canonical = canonicalCondition(input)
        const problems = validateCondition(canonical, path)
        if (problems.length > 0) return { _tag: "invalid", problems } as CheckedCondition
        return yield* references(projectId, canonical as Condition, path, options)
      }, mapSqlError)

      return ConditionCheck.of({ check, references })
    })
  )
}
