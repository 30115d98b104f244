/**
 * A campaign's composer: its content (typed in the template editor's body editor, or started from a
 * template, with the same live preview for a chosen contact), and its audience (every contact, a segment, or a filter built with the
 * condition builder) with the live recipient count. Saves a DRAFT (new) or replaces one (DRAFT or
 * SCHEDULED); sending happens on the campaign's page. Leaving with unsaved edits asks first.
 */
import { Effect } from "effect"
import { type FormEvent, useState } from "react"
import { Link, useNavigate, useParams } from "react-router"
import type { Campaign } from "../../../../src/http/api/campaigns.ts"
import type { FieldError } from "../../api/failure.ts"
import { useApiMutation, useApiQuery, useProjectId } from "../../api/hooks.ts"
import { AudiencePreview } from "../../components/conditions/AudiencePreview.tsx"
import { asCondition, ConditionBuilder } from "../../components/conditions/ConditionBuilder.tsx"
import type { Condition } from "../../components/conditions/model.ts"
import { Card, Field, MutationError } from "../../components/Form.tsx"
import { Page } from "../../components/Page.tsx"
import { QueryView } from "../../components/States.tsx"
import { SAVED, UnsavedChanges } from "../../components/UnsavedChanges.tsx"
import { type MailContentDraft, mailContentPayload } from "../mailContent.ts"
import { BodyEditor } from "../template/BodyEditor.tsx"
import { MailPreview } from "../template/MailPreview.tsx"
import { audienceOf } from "./audience.ts"

type AudienceType = "ALL" | "SEGMENT" | "FILTERED"
type MailType = "MARKETING" | "TRANSACTIONAL"

interface Draft extends MailContentDraft {
  readonly type: MailType
  readonly audienceType: AudienceType
  readonly segmentId: string
  readonly audienceCondition: Condition
}

const EMPTY: Draft = {
  name: "",
  subject: "",
  body: "<h1>Hello {{ firstName ?? \"there\" }}</h1>\n<p>Write your message here.</p>\n<p><a href=\"{{ unsubscribeUrl }}\">Unsubscribe</a></p>\n",
  from: "",
  fromName: "",
  replyTo: "",
  type: "MARKETING",
  audienceType: "ALL",
  segmentId: "",
  audienceCondition: { logic: "AND", groups: [{ filters: [{ field: "subscribed", operator: "equals", value: true }] }] }
}

/** The mail content of a campaign or a template, as the form holds it. */
const contentOf = (source: Pick<typeof Campaign.Type, "subject" | "body" | "from" | "fromName" | "replyTo" | "type">) => ({
  subject: source.subject,
  body: source.body,
  from: source.from,
  fromName: source.fromName ?? "",
  replyTo: source.replyTo ?? "",
  type: source.type === "TRANSACTIONAL" ? "TRANSACTIONAL" as const : "MARKETING" as const
})

const draftOf = (campaign: typeof Campaign.Type): Draft => ({
  name: campaign.name,
  ...contentOf(campaign),
  audienceType: campaign.audienceType,
  segmentId: campaign.segmentId ?? "",
  audienceCondition: campaign.audienceCondition === null ? EMPTY.audienceCondition : asCondition(campaign.audienceCondition)
})

/** What the API takes: empty optional fields are null; only the chosen audience's part. */
const payloadOf = (draft: Draft) => ({
  ...mailContentPayload(draft),
  type: draft.type,
  audienceType: draft.audienceType,
  segmentId: draft.audienceType === "SEGMENT" ? draft.segmentId : null,
  audienceCondition: draft.audienceType === "FILTERED" ? draft.audienceCondition : null
})

const NO_ERRORS: ReadonlyArray<FieldError> = []

export function NewCampaignPage() {
  return <CampaignEditor initial={EMPTY} />
}

export function EditCampaignPage() {
  const { campaignId = "" } = useParams()
  const campaign = useApiQuery(["campaigns", "get", campaignId], (client) => client.campaigns.get({ params: { id: campaignId } }))
  return <QueryView query={campaign}>{(campaign) => <CampaignEditor key={campaign.id} campaignId={campaign.id} initial={draftOf(campaign)} />}</QueryView>
}

function CampaignEditor({ campaignId, initial }: { readonly campaignId?: string; readonly initial: Draft }) {
  const projectId = useProjectId()
  const navigate = useNavigate()
  const [draft, setDraft] = useState(initial)
  const [previewErrors, setPreviewErrors] = useState<ReadonlyArray<FieldError>>(NO_ERRORS)
  const set = (patch: Partial<Draft>) => setDraft((current) => ({ ...current, ...patch }))
  const templates = useApiQuery(["templates", "list", "all"], (client) => client.templates.list({ query: { pageSize: "100" } }))
  const segments = useApiQuery(["segments", "list"], (client) => client.segments.list({}))
  const save = useApiMutation(
    (client) =>
      campaignId === undefined
        ? Effect.map(client.campaigns.create({ payload: payloadOf(draft) }), (created) => created.data.id)
        : Effect.map(client.campaigns.replace({ params: { id: campaignId }, payload: payloadOf(draft) }), (replaced) => replaced.id),
    { invalidates: [["campaigns"]], onSuccess: (id) => navigate(`/p/${projectId}/campaigns/${id}`, { state: SAVED }) }
  )
  const submit = (event: FormEvent) => {
    event.preventDefault()
    save.mutate(undefined)
  }
  const copyTemplate = (id: string) => {
    const template = templates.data?.data.find((entry) => entry.id === id)
    if (!template) return
    set({ ...contentOf(template), ...(draft.name === "" ? { name: template.name } : {}) })
  }
  const saveErrors = save.error?.fieldErrors ?? NO_ERRORS
  return (
    <Page title={campaignId === undefined ? "New campaign" : `Edit ${initial.name}`}>
      <p className="-mt-4 mb-6 text-sm">
        <Link to={`/p/${projectId}/campaigns${campaignId === undefined ? "" : `/${campaignId}`}`} className="link">
          {campaignId === undefined ? "All campaigns" : "Back to the campaign"}
        </Link>
      </p>
      <form onSubmit={submit} className="space-y-6">
        <Card title="Message">
          <div className="grid gap-4 sm:grid-cols-2">
            <Field label="Name" value={draft.name} onChange={(event) => set({ name: event.target.value })} required />
            <label className="block text-sm font-medium text-slate-700">
              Start from a template
              <select aria-label="Start from a template" className="input mt-1" value="" onChange={(event) => copyTemplate(event.target.value)} disabled={!templates.data || templates.data.data.length === 0}>
                <option value="">{templates.data?.data.length === 0 ? "No templates yet" : "Choose a template to copy…"}</option>
                {(templates.data?.data ?? []).map((template) => <option key={template.id} value={template.id}>{template.name}</option>)}
              </select>
            </label>
            <Field label="Subject" value={draft.subject} onChange={(event) => set({ subject: event.target.value })} required />
            <label className="block text-sm font-medium text-slate-700">
              Kind
              <select aria-label="Kind" className="input mt-1" value={draft.type} onChange={(event) => set({ type: event.target.value as MailType })}>
                <option value="MARKETING">Marketing (skips unsubscribed contacts)</option>
                <option value="TRANSACTIONAL">Transactional</option>
              </select>
            </label>
            <Field label="From address" type="email" value={draft.from} onChange={(event) => set({ from: event.target.value })} required hint="On a verified sending domain" />
            <Field label="From name" value={draft.fromName} onChange={(event) => set({ fromName: event.target.value })} />
            <Field label="Reply-to" type="email" value={draft.replyTo} onChange={(event) => set({ replyTo: event.target.value })} />
          </div>
          <div className="mt-4 grid min-w-0 gap-6 xl:grid-cols-2">
            <div className="min-w-0"><BodyEditor value={draft.body} onChange={(body) => set({ body })} /></div>
            <MailPreview subject={draft.subject} body={draft.body} />
          </div>
        </Card>
        <Card title="Audience">
          <fieldset>
            <legend className="sr-only">Who receives it</legend>
            <div className="flex flex-wrap gap-4 text-sm">
              {([["ALL", "All contacts"], ["SEGMENT", "A segment"], ["FILTERED", "Contacts matching a filter"]] as const).map(([value, label]) => (
                <label key={value} className="flex items-center gap-2">
                  <input type="radio" name="audience" checked={draft.audienceType === value} onChange={() => set({ audienceType: value })} /> {label}
                </label>
              ))}
            </div>
          </fieldset>
          <div className="mt-4 grid min-w-0 gap-4 lg:grid-cols-[minmax(0,1fr)_18rem]">
            <div className="min-w-0">
              {draft.audienceType === "ALL" && <p className="text-sm text-slate-600">Every contact of the project{draft.type === "MARKETING" ? " who is subscribed" : ""} and not suppressed.</p>}
              {draft.audienceType === "SEGMENT" && (
                <label className="block text-sm font-medium text-slate-700">
                  Segment
                  <select aria-label="Segment" className="input mt-1" value={draft.segmentId} onChange={(event) => set({ segmentId: event.target.value })}>
                    <option value="">Choose a segment…</option>
                    {(segments.data ?? []).map((segment) => <option key={segment.id} value={segment.id}>{segment.name} ({segment.memberCount.toLocaleString()})</option>)}
                  </select>
                </label>
              )}
              {draft.audienceType === "FILTERED" && (
                <ConditionBuilder
                  label="Audience filter"
                  path="audienceCondition"
                  value={draft.audienceCondition}
                  onChange={(audienceCondition) => set({ audienceCondition })}
                  errors={previewErrors.length > 0 ? previewErrors.map((error) => ({ ...error, field: error.field.replace(/^condition/, "audienceCondition") })) : saveErrors}
                />
              )}
            </div>
            <AudiencePreview audience={audienceOf(draft)} label="recipients" sampleSize={5} onFieldErrors={setPreviewErrors} />
          </div>
        </Card>
        <div>
          <button type="submit" className="btn-primary" disabled={save.isPending}>{campaignId === undefined ? "Save draft" : "Save changes"}</button>
          <MutationError error={save.error} />
        </div>
      </form>
      <UnsavedChanges dirty={JSON.stringify(draft) !== JSON.stringify(initial)} what="campaign" />
    </Page>
  )
}
