/**
 * A template's editor: its fields, the body in CodeMirror, and a live preview rendered by the server's
 * own renderer (POST /templates/preview) for a chosen contact, shown in a sandboxed iframe (no scripts,
 * no access to this page). The preview follows the typing after a short pause.
 */
import { keepPreviousData, useQuery } from "@tanstack/react-query"
import { useEffect, useRef, useState } from "react"
import { Link, useNavigate, useParams } from "react-router"
import { callApi } from "../api/client.ts"
import type { ApiFailure } from "../api/failure.ts"
import { projectKey, useApiMutation, useApiQuery, useProjectId } from "../api/hooks.ts"
import { CodeEditor, type InsertText } from "../components/CodeEditor.tsx"
import { SenderHint } from "../components/Delivery.tsx"
import { Card, Field, MutationError, Notice } from "../components/Form.tsx"
import { Page } from "../components/Page.tsx"
import { ErrorState, Loading } from "../components/States.tsx"
import { mailContentPayload } from "./mailContent.ts"

const TYPES = ["TRANSACTIONAL", "MARKETING", "HEADLESS"] as const
type TemplateType = typeof TYPES[number]

interface Draft {
  name: string
  subject: string
  body: string
  from: string
  fromName: string
  replyTo: string
  type: TemplateType
}

const EMPTY: Draft = {
  name: "",
  subject: "Hello {{ firstName ?? \"there\" }}",
  body: "<h1>Hello {{ firstName ?? \"there\" }}</h1>\n<p>Write your message here.</p>\n<p><a href=\"{{ unsubscribeUrl }}\">Unsubscribe</a></p>\n",
  from: "",
  fromName: "",
  replyTo: "",
  type: "MARKETING"
}

/** What the API takes: empty optional fields are null. */
const payloadOf = (draft: Draft) => ({ ...mailContentPayload(draft), type: draft.type })

/** The value once it has stopped changing for `ms`. */
const useSettled = <A,>(value: A, ms: number): A => {
  const [settled, setSettled] = useState(value)
  useEffect(() => {
    const timer = setTimeout(() => setSettled(value), ms)
    return () => clearTimeout(timer)
  }, [value, ms])
  return settled
}

export function NewTemplatePage() {
  return <TemplateEditor initial={EMPTY} />
}

export function TemplatePage() {
  const { templateId = "" } = useParams()
  const template = useApiQuery(["templates", "get", templateId], (client) => client.templates.get({ params: { id: templateId } }))
  if (template.isPending) return <Loading />
  if (template.isError) return <ErrorState failure={template.error} onRetry={() => void template.refetch()} />
  const loaded = template.data
  return (
    <TemplateEditor
      key={loaded.id}
      templateId={loaded.id}
      initial={{
        name: loaded.name,
        subject: loaded.subject,
        body: loaded.body,
        from: loaded.from,
        fromName: loaded.fromName ?? "",
        replyTo: loaded.replyTo ?? "",
        type: loaded.type
      }}
    />
  )
}

function TemplateEditor({ templateId, initial }: { readonly templateId?: string; readonly initial: Draft }) {
  const projectId = useProjectId()!
  const navigate = useNavigate()
  const [draft, setDraft] = useState(initial)
  const [contactId, setContactId] = useState("")
  const insert = useRef<InsertText | null>(null)
  const set = (field: keyof Draft) => (value: string) => setDraft((current) => ({ ...current, [field]: value }))
  const base = `/p/${projectId}/templates`

  const save = useApiMutation(
    (client, payload: ReturnType<typeof payloadOf>) =>
      templateId === undefined ? client.templates.create({ payload }) : client.templates.update({ params: { id: templateId }, payload }),
    {
      invalidates: [["templates"]],
      onSuccess: (saved) => {
        if (templateId === undefined) void navigate(`${base}/${saved.id}`, { replace: true })
      }
    }
  )
  const duplicate = useApiMutation((client, id: string) => client.templates.duplicate({ params: { id } }), {
    invalidates: [["templates"]],
    onSuccess: (copy) => void navigate(`${base}/${copy.id}`)
  })

  return (
    <Page
      title={templateId === undefined ? "New template" : initial.name}
      actions={templateId !== undefined && (
        <button type="button" className="btn-secondary" disabled={duplicate.isPending} onClick={() => duplicate.mutate(templateId)}>Duplicate</button>
      )}
    >
      <p className="-mt-4 mb-6 text-sm"><Link to={base} className="link">All templates</Link></p>
      <div className="grid grid-cols-1 gap-6 xl:grid-cols-2">
        <form
          className="min-w-0 space-y-4"
          onSubmit={(event) => {
            event.preventDefault()
            save.mutate(payloadOf(draft))
          }}
        >
          <Card>
            <div className="grid grid-cols-1 gap-4 sm:grid-cols-2">
              <Field label="Name" value={draft.name} onChange={(event) => set("name")(event.target.value)} required maxLength={255} />
              <label className="block text-sm font-medium text-slate-700">
                Type
                <select className="input mt-1" value={draft.type} onChange={(event) => set("type")(event.target.value)}>
                  {TYPES.map((type) => <option key={type} value={type}>{type.toLowerCase()}</option>)}
                </select>
              </label>
              <Field label="From" type="email" value={draft.from} onChange={(event) => set("from")(event.target.value)} required hint={<SenderHint projectId={projectId} />} />
              <Field label="From name" value={draft.fromName} onChange={(event) => set("fromName")(event.target.value)} />
              <Field label="Reply to" type="email" value={draft.replyTo} onChange={(event) => set("replyTo")(event.target.value)} />
            </div>
            <div className="mt-4">
              <Field label="Subject" value={draft.subject} onChange={(event) => set("subject")(event.target.value)} required />
            </div>
            <div className="mt-4">
              <div className="mb-1 flex flex-wrap items-center justify-between gap-2">
                <p className="text-sm font-medium text-slate-700">Body</p>
                <ImageUpload onUploaded={(url) => insert.current?.(`<img src="${url}" alt="" style="max-width:100%">`)} />
              </div>
              <CodeEditor label="Body" value={draft.body} onChange={set("body")} insertRef={insert} />
              <p className="mt-1 text-xs text-slate-500">
                HTML with Liquid: <code className="font-mono">{"{{ firstName }}"}</code>, <code className="font-mono">{"{{ plan ?? \"free\" }}"}</code>,{" "}
                <code className="font-mono">{"{% if … %}"}</code>; links <code className="font-mono">{"{{ unsubscribeUrl }}"}</code> and <code className="font-mono">{"{{ manageUrl }}"}</code>.
              </p>
            </div>
            <button type="submit" className="btn-primary mt-5" disabled={save.isPending}>{templateId === undefined ? "Create template" : "Save"}</button>
            {save.isSuccess && templateId !== undefined && <div className="mt-4"><Notice>Saved.</Notice></div>}
            <MutationError error={save.error} />
            <MutationError error={duplicate.error} />
          </Card>
          {templateId !== undefined && <Usage templateId={templateId} />}
        </form>
        <Preview subject={draft.subject} body={draft.body} contactId={contactId} onContact={setContactId} />
      </div>
    </Page>
  )
}

function Preview({ subject, body, contactId, onContact }: {
  readonly subject: string
  readonly body: string
  readonly contactId: string
  readonly onContact: (id: string) => void
}) {
  const projectId = useProjectId()!
  const input = useSettled({ subject, body, contactId }, 250)
  const contacts = useApiQuery(["contacts", "preview-choices"], (client) => client.contacts.list({ query: { limit: "50" } }))
  // The previous preview stays up while the next renders (no flashing as one types).
  const preview = useQuery<{ subject: string; html: string }, ApiFailure>({
    queryKey: projectKey(projectId, ["template-preview", input]),
    queryFn: ({ signal }) =>
      callApi(projectId, (client) =>
        client.templates.preview({
          payload: { subject: input.subject, body: input.body, ...(input.contactId ? { contactId: input.contactId } : {}) }
        }), signal),
    placeholderData: keepPreviousData,
    enabled: input.subject.trim() !== "" && input.body !== "",
    retry: false
  })
  return (
    <section aria-label="Preview" className="min-w-0">
      <div className="mb-3 flex flex-wrap items-end justify-between gap-3">
        <h2 className="text-lg font-semibold text-slate-800">Preview</h2>
        <label className="text-sm font-medium text-slate-700">
          For
          <select className="input ml-2 inline-block w-auto py-1" value={contactId} onChange={(event) => onContact(event.target.value)}>
            <option value="">a sample contact (jane@example.com)</option>
            {(contacts.data?.data ?? []).map((contact) => <option key={contact.id} value={contact.id}>{contact.email}</option>)}
          </select>
        </label>
      </div>
      {preview.isError && <div className="mb-3"><ErrorState failure={preview.error} /></div>}
      <div className="overflow-hidden rounded-lg border border-slate-200 bg-white shadow-sm">
        <p className="border-b border-slate-200 px-4 py-2 text-sm">
          <span className="text-slate-500">Subject: </span>
          <span data-testid="preview-subject" className="font-medium text-slate-900">{preview.data?.subject ?? ""}</span>
        </p>
        {/* sandbox with no permissions: the mail's HTML runs no script and cannot reach this page. */}
        <iframe title="Rendered body" sandbox="" srcDoc={preview.data?.html ?? ""} className="h-[28rem] w-full bg-white" />
      </div>
    </section>
  )
}

function Usage({ templateId }: { readonly templateId: string }) {
  const projectId = useProjectId()!
  const usage = useApiQuery(["templates", "usage", templateId], (client) => client.templates.usage({ params: { id: templateId } }))
  if (!usage.data) return null
  const steps = usage.data.workflows
  return (
    <Card title="Used by">
      {steps.length === 0
        ? <p className="text-sm text-slate-600">No workflow sends this template.</p>
        : (
          <ul className="space-y-1 text-sm">
            {steps.map((step) => <li key={step.stepId}><Link className="link" to={`/p/${projectId}/workflows/${step.id}`}>{step.name}</Link></li>)}
          </ul>
        )}
    </Card>
  )
}

/**
 * Uploads an image through POST /uploads/image (the contract's multipart payload, sent by the typed client)
 * and hands its public URL on, to be put into the body at the cursor.
 */
function ImageUpload({ onUploaded }: { readonly onUploaded: (url: string) => void }) {
  const input = useRef<HTMLInputElement>(null)
  const upload = useApiMutation((client, file: File) => {
    const form = new FormData()
    form.append("file", file, file.name)
    return client.uploads.image({ payload: form })
  }, { onSuccess: ({ url }) => onUploaded(url) })
  return (
    <div className="min-w-0">
      <label className={`btn-secondary cursor-pointer px-2 py-1 text-xs focus-within:ring-2 focus-within:ring-indigo-500 ${upload.isPending ? "opacity-60" : ""}`}>
        {upload.isPending ? "Uploading…" : "Insert image"}
        <input
          ref={input}
          type="file"
          accept="image/png,image/jpeg,image/gif,image/webp"
          className="sr-only"
          disabled={upload.isPending}
          onChange={(event) => {
            const file = event.target.files?.[0]
            if (file) upload.mutate(file)
            event.target.value = ""
          }}
        />
      </label>
      <MutationError error={upload.error} />
    </div>
  )
}
