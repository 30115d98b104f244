/**
 * The live count and sample of an audience while it is edited (POST /segments/preview): a condition,
 * a segment's members, or every contact. Follows the edits after a short pause; the previous answer
 * stays up while the next one comes. A 422 is handed to `onFieldErrors` (for the builder to show at
 * its nodes) instead of being shown here.
 */
import { keepPreviousData, useQuery } from "@tanstack/react-query"
import { useEffect } from "react"
import { Link } from "react-router"
import { callApi } from "../../api/client.ts"
import type { ApiFailure, FieldError } from "../../api/failure.ts"
import { projectKey, useProjectId } from "../../api/hooks.ts"
import { ErrorState } from "../States.tsx"
import { nounFor } from "../words.ts"
import type { Condition } from "./model.ts"
import { useSettled } from "./settled.ts"

export type Audience = { readonly condition: Condition } | { readonly segmentId: string } | { readonly all: true }

const NO_ERRORS: ReadonlyArray<FieldError> = []

export const usePreview = (audience: Audience | null, sampleSize: number) => {
  const projectId = useProjectId()
  const settled = useSettled(audience, 400)
  return useQuery<{ total: number; reachable: number; sample: ReadonlyArray<{ id: string; email: string; subscribed: boolean }> }, ApiFailure>({
    queryKey: projectKey(projectId, ["segments", "preview", settled, sampleSize]),
    queryFn: ({ signal }) =>
      callApi(projectId, (client) =>
        client.segments.preview({
          payload: {
            ...(settled !== null && "condition" in settled ? { condition: settled.condition } : {}),
            ...(settled !== null && "segmentId" in settled ? { segmentId: settled.segmentId } : {}),
            sampleSize
          }
        }), signal),
    placeholderData: keepPreviousData,
    enabled: settled !== null,
    retry: false
  })
}

export function AudiencePreview({
  audience,
  label,
  sampleSize = 10,
  onFieldErrors
}: {
  readonly audience: Audience | null
  /** What the count is (the words then agree with it: "1 contact matches", "2 recipients"). */
  readonly label: "contacts match" | "recipients"
  readonly sampleSize?: number
  readonly onFieldErrors?: (errors: ReadonlyArray<FieldError>) => void
}) {
  const projectId = useProjectId()
  const preview = usePreview(audience, sampleSize)
  const fieldErrors = preview.error?.fieldErrors ?? NO_ERRORS
  useEffect(() => onFieldErrors?.(fieldErrors), [fieldErrors, onFieldErrors])
  const data = preview.isError ? undefined : preview.data
  const count = label === "recipients" ? data?.reachable : data?.total
  return (
    <section aria-label="Live count" aria-busy={preview.isFetching} className="rounded-lg border border-slate-200 bg-white p-4">
      <p className="text-sm text-slate-600" aria-live="polite">
        <span data-testid="live-count" className="text-2xl font-semibold tabular-nums text-slate-900">{count === undefined ? "—" : count.toLocaleString()}</span>
        {" "}{label === "recipients" ? nounFor(count ?? 0, "recipient") : count === 1 ? "contact matches" : "contacts match"}
        {preview.isFetching && <span className="ml-2 text-xs text-slate-400">updating…</span>}
      </p>
      {data && label === "recipients" && data.total !== data.reachable && (
        <p className="mt-1 text-xs text-slate-500">{(data.total - data.reachable).toLocaleString()} more match but are unsubscribed or suppressed.</p>
      )}
      {data && label === "contacts match" && data.total > 0 && (
        <p className="mt-1 text-xs text-slate-500">
          {data.total === 1
            ? (data.reachable === 1 ? "Subscribed and reachable." : "Not subscribed, or not reachable.")
            : `${data.reachable.toLocaleString()} of them subscribed and reachable.`}
        </p>
      )}
      {preview.isError && fieldErrors.length === 0 && <div className="mt-3"><ErrorState failure={preview.error} /></div>}
      {preview.isError && fieldErrors.length > 0 && <p className="mt-2 text-sm text-red-700">Fix the marked {fieldErrors.length === 1 ? "filter" : "filters"} to see the count.</p>}
      {data && data.sample.length > 0 && (
        <ul aria-label="Sample of matching contacts" className="mt-3 space-y-1 text-sm">
          {data.sample.map((contact) => (
            <li key={contact.id} className="truncate">
              <Link to={`/p/${projectId}/contacts/${contact.id}`} className="link">{contact.email}</Link>
              {!contact.subscribed && <span className="ml-2 text-xs text-slate-500">unsubscribed</span>}
            </li>
          ))}
        </ul>
      )}
    </section>
  )
}
