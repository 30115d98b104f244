/** A campaign's audience as the audience preview asks for it (its own module: the campaign page needs it without the composer). */
import type { Audience } from "../../components/conditions/AudiencePreview.tsx"
import type { Condition } from "../../components/conditions/model.ts"

export const audienceOf = (draft: {
  readonly audienceType: "ALL" | "SEGMENT" | "FILTERED"
  readonly segmentId: string
  readonly audienceCondition: Condition
}): Audience | null =>
  draft.audienceType === "ALL"
    ? { all: true }
    : draft.audienceType === "SEGMENT"
    ? draft.segmentId === "" ? null : { segmentId: draft.segmentId }
    : { condition: draft.audienceCondition }
