/**
 * A template's editor: its fields, the body in CodeMirror, and a live preview rendered by the server's
 * own renderer for a chosen contact (template/). Leaving with unsaved edits asks first; Delete asks too.
 */
import { useQueryClient } from "@tanstack/react-query"
import { useRef, useState } from "react"
import { Link, useNavigate, useParams } from "react-router"
import type { FieldError } from "../api/failure.ts"
import { fieldError } from "../api/fieldErrors.ts"
import { projectKey, useApiMutation, useApiQuery, useProjectId } from "../api/hooks.ts"
import { Confirm } from "../components/Confirm.tsx"
import { SenderHint } from "../components/Delivery.tsx"
import { Card, Field, MutationError, Notice } from "../components/Form.tsx"
import { Page } from "../components/Page.tsx"
import { ErrorState, Loading } from "../components/States.tsx"
import { SAVED, UnsavedChanges } from "../components/UnsavedChanges.tsx"
import { mailContentPayload } from "./mailContent.ts"
import { BodyEditor } from "./template/BodyEditor.tsx"
import { MailPreview } from "./template/MailPreview.tsx"

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

/** The fields the form shows the server's errors at. */
const FIELDS = ["name", "type", "from", "fromName", "replyTo", "subject", "body"]

const NO_ERRORS: ReadonlyArray<FieldError> = []

/** What the API takes: empty optional fields are null. */
const payloadOf = (draft: Draft) => ({ ...mailContentPayload(draft), type: draft.type })

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
  const queryClient = useQueryClient()
  const [draft, setDraft] = useState(initial)
  // What the server holds: edits differing from it are unsaved. What was sent becomes it once the save succeeds.
  const [saved, setSaved] = useState(initial)
  const sent = useRef(initial)
  const [deleting, setDeleting] = useState(false)
  const [previewErrors, setPreviewErrors] = useState(NO_ERRORS)
  const base = `/p/${projectId}/templates`
  const dirty = JSON.stringify(draft) !== JSON.stringify(saved)

  const save = useApiMutation(
    (client, payload: ReturnType<typeof payloadOf>) =>
      templateId === undefined ? client.templates.create({ payload }) : client.templates.update({ params: { id: templateId }, payload }),
    {
      invalidates: [["templates"]],
      onSuccess: (result) => {
        setSaved(sent.current)
        if (templateId === undefined) void navigate(`${base}/${result.id}`, { replace: true, state: SAVED })
      }
    }
  )
  // An edit answers the save's field errors: they no longer describe what is typed.
  const set = (field: keyof Draft) => (value: string) => {
    if (save.isError) save.reset()
    setDraft((current) => ({ ...current, [field]: value }))
  }
  /** The save's error for a field, else what the live preview found in it (half-typed Liquid). */
  const errorAt = (field: string) => fieldError(save.error, field) ?? (field === "subject" || field === "body" ? fieldError({ fieldErrors: previewErrors }, field) : undefined)

  const duplicate = useApiMutation((client, id: string) => client.templates.duplicate({ params: { id } }), {
    invalidates: [["templates"]],
    onSuccess: (copy) => void navigate(`${base}/${copy.id}`)
  })
  // Lists read afresh when next shown; nothing refetched now (the deleted template's own queries would answer 404).
  const remove = useApiMutation((client, id: string) => client.templates.delete({ params: { id } }), {
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: projectKey(projectId, ["templates"]), refetchType: "none" })
      void navigate(base, { state: SAVED })
    }
  })

  return (
    <Page
      title={templateId === undefined ? "New template" : initial.name}
      actions={templateId !== undefined && (
        <div className="flex gap-2">
          <button type="button" className="btn-secondary" disabled={duplicate.isPending} onClick={() => duplicate.mutate(templateId)}>Duplicate</button>
          <button type="button" className="btn-danger" onClick={() => setDeleting(true)}>Delete</button>
        </div>
      )}
    >
      <p className="-mt-4 mb-6 text-sm"><Link to={base} className="link">All templates</Link></p>
      <div className="grid grid-cols-1 gap-6 xl:grid-cols-2">
        <form
          className="min-w-0 space-y-4"
          onSubmit={(event) => {
            event.preventDefault()
            sent.current = draft
            save.mutate(payloadOf(draft))
          }}
        >
          <Card>
            <div className="grid grid-cols-1 gap-4 sm:grid-cols-2">
              <Field label="Name" value={draft.name} onChange={(event) => set("name")(event.target.value)} required maxLength={255} error={errorAt("name")} />
              <label className="block text-sm font-medium text-slate-700">
                Type
                <select className="input mt-1" value={draft.type} onChange={(event) => set("type")(event.target.value)}>
                  {TYPES.map((type) => <option key={type} value={type}>{type.toLowerCase()}</option>)}
                </select>
              </label>
              <Field label="From" type="email" value={draft.from} onChange={(event) => set("from")(event.target.value)} required hint={<SenderHint projectId={projectId} />} error={errorAt("from")} />
              <Field label="From name" value={draft.fromName} onChange={(event) => set("fromName")(event.target.value)} error={errorAt("fromName")} />
              <Field label="Reply to" type="email" value={draft.replyTo} onChange={(event) => set("replyTo")(event.target.value)} error={errorAt("replyTo")} />
            </div>
            <div className="mt-4">
              <Field label="Subject" value={draft.subject} onChange={(event) => set("subject")(event.target.value)} required error={errorAt("subject")} />
            </div>
            <div className="mt-4">
              <BodyEditor value={draft.body} onChange={set("body")} error={errorAt("body")} />
            </div>
            <div className="mt-5 flex flex-wrap items-center gap-3">
              <button type="submit" className="btn-primary" disabled={save.isPending}>{templateId === undefined ? "Create template" : "Save"}</button>
              {dirty && <span className="text-sm text-amber-800" data-testid="unsaved">Unsaved changes</span>}
            </div>
            {save.isSuccess && !dirty && templateId !== undefined && <div className="mt-4"><Notice>Saved.</Notice></div>}
            <MutationError error={save.error} fields={FIELDS} />
            <MutationError error={duplicate.error} />
            <MutationError error={remove.error} />
          </Card>
          {templateId !== undefined && <Usage templateId={templateId} />}
        </form>
        <MailPreview subject={draft.subject} body={draft.body} onFieldErrors={setPreviewErrors} />
      </div>
      <UnsavedChanges dirty={dirty} what="template" />
      {templateId !== undefined && (
        <Confirm
          open={deleting}
          title={`Delete ${initial.name}?`}
          action="Delete template"
          danger
          busy={remove.isPending}
          onConfirm={() => remove.mutate(templateId)}
          onCancel={() => setDeleting(false)}
        >
          The template is deleted for good; mail already sent with it is kept. A template that a workflow step sends cannot be deleted: change those steps first.
        </Confirm>
      )}
    </Page>
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
