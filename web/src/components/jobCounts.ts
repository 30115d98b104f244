/** A contact job's counts in words (shown under its progress bar, web/src/components/Job.tsx). */
import type { Job } from "../../../src/http/api/contactJobs.ts"
import { countOf } from "./words.ts"

/** What a bulk action did to each contact it counts as updated. */
const BULK_OUTCOME = { subscribe: "now subscribed", unsubscribe: "now unsubscribed", delete: "deleted" } as const

/**
 * The job's counts in its own words: an import's rows created, updated, skipped and failed; a bulk
 * action's contacts now (un)subscribed or deleted, with those not found or failed only when there are any.
 */
export const countsOf = (job: typeof Job.Type): string => {
  const { processed, total, created, updated, skipped, failed } = job.progress
  const n = (value: number) => value.toLocaleString()
  if (job.type === "import") {
    return `${n(processed)} of ${countOf(total, "row")} · ${n(created)} created · ${n(updated)} updated · ${n(skipped)} skipped · ${
      n(failed)
    } failed`
  }
  return [
    `${n(processed)} of ${countOf(total, "contact")}`,
    `${n(updated)} ${BULK_OUTCOME[job.type]}`,
    ...(skipped > 0 ? [`${n(skipped)} not found`] : []),
    ...(failed > 0 ? [`${n(failed)} failed`] : [])
  ].join(" · ")
}
