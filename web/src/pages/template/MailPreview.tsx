/**
 * A mail's live preview, shared by templates and campaigns: the subject and body rendered by the server's
 * own renderer (POST /templates/preview) for a chosen contact or a sample one, after a short pause in the
 * typing, the body in a sandboxed iframe (no scripts, no access to this page). The last good preview
 * stays up while the next renders, and while half-typed Liquid answers 422.
 */
import { keepPreviousData, useQuery } from "@tanstack/react-query"
import { useEffect, useState } from "react"
import { callApi } from "../../api/client.ts"
import type { ApiFailure, FieldError } from "../../api/failure.ts"
import { projectKey, useApiQuery, useProjectId } from "../../api/hooks.ts"
import { useSettled } from "../../components/conditions/settled.ts"
import { ErrorState } from "../../components/States.tsx"

const NO_ERRORS: ReadonlyArray<FieldError> = []

export function MailPreview({ subject, body, onFieldErrors }: {
  readonly subject: string
  readonly body: string
  /** What the last render found wrong in the subject or body (for the editor to show at those fields), or none. */
  readonly onFieldErrors?: (errors: ReadonlyArray<FieldError>) => void
}) {
  const projectId = useProjectId()!
  const [contactId, setContactId] = useState("")
  const input = useSettled({ subject: subject.trim() === "" ? "(no subject)" : subject, body, contactId }, 250)
  const contacts = useApiQuery(["contacts", "preview-choices"], (client) => client.contacts.list({ query: { limit: "50" } }))
  const preview = useQuery<{ subject: string; html: string }, ApiFailure>({
    queryKey: projectKey(projectId, ["template-preview", input]),
    queryFn: ({ signal }) =>
      callApi(projectId, (client) =>
        client.templates.preview({
          payload: { subject: input.subject, body: input.body, ...(input.contactId ? { contactId: input.contactId } : {}) }
        }), signal),
    placeholderData: keepPreviousData,
    enabled: input.body !== "",
    retry: false
  })
  // The last preview that rendered stays up while the text does not render (half-typed Liquid).
  const [lastGood, setLastGood] = useState<{ subject: string; html: string } | undefined>(undefined)
  useEffect(() => {
    if (preview.data !== undefined) setLastGood(preview.data)
  }, [preview.data])
  const shown = preview.data ?? lastGood
  const fieldErrors = preview.error?.fieldErrors ?? NO_ERRORS
  useEffect(() => onFieldErrors?.(fieldErrors), [fieldErrors, onFieldErrors])
  return (
    <section aria-label="Preview" className="min-w-0">
      <div className="mb-3 flex flex-wrap items-end justify-between gap-3">
        <h2 className="text-lg font-semibold text-slate-800">Preview</h2>
        <label className="text-sm font-medium text-slate-700">
          For
          <select className="input ml-2 inline-block w-auto py-1" value={contactId} onChange={(event) => setContactId(event.target.value)}>
            <option value="">a sample contact (jane@example.com)</option>
            {(contacts.data?.data ?? []).map((contact) => <option key={contact.id} value={contact.id}>{contact.email}</option>)}
          </select>
        </label>
      </div>
      {preview.isError && fieldErrors.length === 0 && <div className="mb-3"><ErrorState failure={preview.error} /></div>}
      {fieldErrors.length > 0 && (
        <p className="mb-3 text-sm text-red-700">
          The {fieldErrors.some((error) => error.field === "body") ? "body" : "subject"} does not render as it is (see the message under it): this is the last preview that did.
        </p>
      )}
      <div className="overflow-hidden rounded-lg border border-slate-200 bg-white shadow-sm">
        <p className="border-b border-slate-200 px-4 py-2 text-sm">
          <span className="text-slate-500">Subject: </span>
          <span data-testid="preview-subject" className="font-medium text-slate-900">{shown?.subject ?? ""}</span>
        </p>
        <iframe title="Rendered body" sandbox="" srcDoc={shown?.html ?? ""} className="h-[28rem] w-full bg-white" />
      </div>
    </section>
  )
}
