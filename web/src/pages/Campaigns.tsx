/**
 * Campaigns: the list by status; one campaign: its content and audience, a test send, scheduling in
 * the user's time zone and sending now (confirmed, with the recipient count); while it sends, a live
 * progress bar and cancel; afterwards its outcome (campaign/Outcome.tsx); its body rendered and its
 * recipients (campaign/Recipients.tsx) whatever its status; duplicate and delete.
 */
import { useState } from "react"
import { Link, useNavigate, useParams, useSearchParams } from "react-router"
import type { Campaign } from "../../../src/http/api/campaigns.ts"
import { fieldError } from "../api/fieldErrors.ts"
import { useApiMutation, useApiQuery, useProjectId } from "../api/hooks.ts"
import { anyChange, campaignChange, useLiveRefresh } from "../api/live.tsx"
import { usePreview } from "../components/conditions/AudiencePreview.tsx"
import { asCondition } from "../components/conditions/model.ts"
import { Confirm } from "../components/Confirm.tsx"
import { Card, changeClearing, Field, MutationError, Notice } from "../components/Form.tsx"
import { Badge, cell, Fields, formatDate, Page, Section, Table, wideOnly } from "../components/Page.tsx"
import { NumberedPager } from "../components/Pager.tsx"
import { Empty, QueryView } from "../components/States.tsx"
import { nounFor } from "../components/words.ts"
import { audienceOf } from "./campaign/audience.ts"
import { Outcome, ProgressBar } from "./campaign/Outcome.tsx"
import { Recipients } from "./campaign/Recipients.tsx"
import { MailPreview } from "./template/MailPreview.tsx"

type CampaignData = typeof Campaign.Type

const STATUSES = ["DRAFT", "SCHEDULED", "SENDING", "SENT", "CANCELLED"] as const
type Status = typeof STATUSES[number]

export const statusTone = (status: string) =>
  status === "SENT" ? "green" : status === "SENDING" || status === "SCHEDULED" ? "indigo" : status === "CANCELLED" ? "red" : "slate"

export function CampaignsPage() {
  const projectId = useProjectId()
  const [params, setParams] = useSearchParams()
  const status = STATUSES.find((value) => value === params.get("status"))
  const [page, setPage] = useState(1)
  const query = useApiQuery(
    ["campaigns", "list", status ?? "all", page],
    (client) => client.campaigns.list({ query: { page: String(page), pageSize: "20", ...(status ? { status } : {}) } })
  )
  useLiveRefresh(anyChange, [["campaigns", "list"]])
  const choose = (next: Status | undefined) => {
    setPage(1)
    setParams(next ? { status: next } : {}, { replace: true })
  }
  return (
    <Page title="Campaigns" actions={<Link to={`/p/${projectId}/campaigns/new`} className="btn-primary">New campaign</Link>}>
      <nav aria-label="Status" className="mb-4 flex flex-wrap gap-2">
        {([undefined, ...STATUSES] as const).map((value) => (
          <button
            key={value ?? "all"}
            type="button"
            aria-pressed={status === value}
            onClick={() => choose(value)}
            className={`rounded-full border px-3 py-1 text-sm ${status === value ? "border-indigo-600 bg-indigo-600 text-white" : "border-slate-300 bg-white text-slate-700 hover:bg-slate-50"}`}
          >
            {value === undefined ? "All" : value.charAt(0) + value.slice(1).toLowerCase()}
          </button>
        ))}
      </nav>
      <QueryView
        query={query}
        isEmpty={(result) => result.total === 0}
        empty={<Empty title={status ? `No ${status.toLowerCase()} campaigns` : "No campaigns yet"}><Link className="link" to={`/p/${projectId}/campaigns/new`}>Compose one</Link>.</Empty>}
      >
        {(result) => (
          <>
            <Table label="Campaigns" head={["Name", "Status", "Recipients", ["Sent", wideOnly], ["Opened", wideOnly], ["Created", wideOnly]]}>
              {result.data.map((campaign) => (
                <tr key={campaign.id} className="hover:bg-slate-50">
                  <td className={cell}><Link to={`/p/${projectId}/campaigns/${campaign.id}`} className="link break-words">{campaign.name}</Link></td>
                  <td className={cell}><Badge tone={statusTone(campaign.status)}>{campaign.status.toLowerCase()}</Badge></td>
                  <td className={`${cell} tabular-nums`}>{campaign.totalRecipients.toLocaleString()}</td>
                  <td className={`${cell} ${wideOnly} tabular-nums`}>{campaign.sentCount.toLocaleString()}</td>
                  <td className={`${cell} ${wideOnly} tabular-nums`}>{campaign.openedCount.toLocaleString()}</td>
                  <td className={`${cell} ${wideOnly} whitespace-nowrap text-slate-600`}>{formatDate(campaign.createdAt)}</td>
                </tr>
              ))}
            </Table>
            <NumberedPager page={page} totalPages={result.totalPages} onPage={setPage} />
          </>
        )}
      </QueryView>
    </Page>
  )
}

const isLive = (status: string | undefined) => status === "SENDING" || status === "SCHEDULED"

export function CampaignPage() {
  const { campaignId = "" } = useParams()
  const campaign = useApiQuery(["campaigns", "get", campaignId], (client) => client.campaigns.get({ params: { id: campaignId } }))
  const stats = useApiQuery(["campaigns", "stats", campaignId], (client) => client.campaigns.stats({ params: { id: campaignId } }))
  // Its progress while it sends, and its outcome afterwards (opens and clicks still arrive), follow the
  // project's changes and its mail's events; the link table below too.
  useLiveRefresh(campaignChange(campaignId), [
    ["campaigns", "get", campaignId],
    ["campaigns", "stats", campaignId],
    ["campaigns", "recipients", campaignId],
    ["analytics"]
  ])
  return (
    <QueryView query={campaign}>
      {(campaign) => <CampaignDetail campaign={campaign} stats={stats} />}
    </QueryView>
  )
}

function CampaignDetail({ campaign, stats }: { readonly campaign: CampaignData; readonly stats: Parameters<typeof ProgressBar>[0]["query"] }) {
  const projectId = useProjectId()
  const navigate = useNavigate()
  const [confirm, setConfirm] = useState<"delete" | "cancel" | null>(null)
  const invalidates = [["campaigns"]] as const
  const duplicate = useApiMutation((client) => client.campaigns.duplicate({ params: { id: campaign.id } }), {
    invalidates,
    onSuccess: (created) => navigate(`/p/${projectId}/campaigns/${created.data.id}/edit`)
  })
  const remove = useApiMutation((client) => client.campaigns.delete({ params: { id: campaign.id } }), {
    invalidates,
    onSuccess: () => navigate(`/p/${projectId}/campaigns`)
  })
  const cancel = useApiMutation((client) => client.campaigns.cancel({ params: { id: campaign.id } }), {
    invalidates,
    onSuccess: () => setConfirm(null)
  })
  const editable = campaign.status === "DRAFT" || campaign.status === "SCHEDULED"
  // A scheduled campaign goes back to a draft; one sending stops for good. Only drafts can be deleted.
  const cancelAction = campaign.status === "SCHEDULED" ? "Cancel schedule" : "Cancel sending"
  return (
    <Page
      title={campaign.name}
      actions={
        <>
          {editable && <Link to={`/p/${projectId}/campaigns/${campaign.id}/edit`} className="btn-secondary">Edit</Link>}
          <button type="button" className="btn-secondary" disabled={duplicate.isPending} onClick={() => duplicate.mutate(undefined)}>Duplicate</button>
          {isLive(campaign.status) && <button type="button" className="btn-danger" onClick={() => setConfirm("cancel")}>{cancelAction}</button>}
          {campaign.status === "DRAFT" && <button type="button" className="btn-secondary" onClick={() => setConfirm("delete")}>Delete</button>}
        </>
      }
    >
      <p className="-mt-4 mb-6 text-sm"><Link to={`/p/${projectId}/campaigns`} className="link">All campaigns</Link></p>
      <MutationError error={duplicate.error} />
      <Section title="Campaign">
        <Fields
          items={[
            ["Status", <Badge tone={statusTone(campaign.status)}><span data-testid="campaign-status">{campaign.status.toLowerCase()}</span></Badge>],
            ["Subject", campaign.subject],
            ["From", campaign.fromName ? `${campaign.fromName} <${campaign.from}>` : campaign.from],
            ["Audience", <AudienceLabel campaign={campaign} />],
            ["Scheduled for", formatDate(campaign.scheduledFor)],
            ["Sent", formatDate(campaign.sentAt)]
          ]}
        />
        {campaign.billingHold && <div className="mt-3"><Notice>Paused: {campaign.billingHold}</Notice></div>}
      </Section>
      {editable && <SendPanel campaign={campaign} />}
      {campaign.status !== "DRAFT" && campaign.status !== "SCHEDULED" && (
        <>
          <Section title="Progress"><ProgressBar query={stats} /></Section>
          <Outcome campaign={campaign} stats={stats} />
        </>
      )}
      <Section title="Message">
        <div className="rounded-lg border border-slate-200 bg-white p-4">
          <MailPreview subject={campaign.subject} body={campaign.body} />
          <details className="mt-3">
            <summary className="cursor-pointer text-sm font-medium text-slate-700">Source (HTML with Liquid)</summary>
            <pre className="mt-2 max-h-96 overflow-auto rounded bg-slate-50 p-3 font-mono text-xs text-slate-800" data-testid="campaign-source">{campaign.body}</pre>
          </details>
        </div>
      </Section>
      <Recipients campaignId={campaign.id} status={campaign.status} />
      <Confirm
        open={confirm === "cancel"}
        title={`Cancel ${campaign.name}?`}
        action={cancelAction}
        danger
        busy={cancel.isPending}
        onConfirm={() => cancel.mutate(undefined)}
        onCancel={() => setConfirm(null)}
      >
        <p>
          {campaign.status === "SCHEDULED"
            ? "Nothing has been sent: it goes back to a draft you can edit and send again."
            : "Mail not yet handed to the mail server is not sent. This cannot be undone."}
        </p>
        <MutationError error={cancel.error} />
      </Confirm>
      <Confirm
        open={confirm === "delete"}
        title={`Delete ${campaign.name}?`}
        action="Delete campaign"
        typed={campaign.name}
        danger
        busy={remove.isPending}
        onConfirm={() => remove.mutate(undefined)}
        onCancel={() => setConfirm(null)}
      >
        <p>The campaign and its figures go. Mail already sent stays sent.</p>
        <MutationError error={remove.error} />
      </Confirm>
    </Page>
  )
}

function AudienceLabel({ campaign }: { readonly campaign: CampaignData }) {
  const projectId = useProjectId()
  const segmentId = campaign.segmentId
  const segment = useApiQuery(["segments", "get", segmentId ?? ""], (client) => client.segments.get({ params: { id: segmentId ?? "" } }), {
    enabled: segmentId !== null
  })
  if (campaign.audienceType === "SEGMENT" && segmentId !== null) {
    return <Link to={`/p/${projectId}/segments/${segmentId}`} className="link">Segment {segment.data?.name ?? segmentId}</Link>
  }
  if (campaign.audienceType === "ALL") return <>All contacts</>
  const filters = asCondition(campaign.audienceCondition).groups.length
  return <>Contacts matching a filter ({filters} {filters === 1 ? "group" : "groups"})</>
}

/** The user's time zone, as the browser knows it. */
const timeZone = () => Intl.DateTimeFormat().resolvedOptions().timeZone

/** A datetime-local value (wall time in the user's zone) as an instant. */
const localToIso = (local: string) => new Date(local).toISOString()

function SendPanel({ campaign }: { readonly campaign: CampaignData }) {
  const [testTo, setTestTo] = useState("")
  const [when, setWhen] = useState("")
  const [confirming, setConfirming] = useState(false)
  const invalidates = [["campaigns"]] as const
  const audience = audienceOf({
    audienceType: campaign.audienceType,
    segmentId: campaign.segmentId ?? "",
    audienceCondition: asCondition(campaign.audienceCondition)
  })
  const preview = usePreview(audience, 0)
  const recipients = preview.data === undefined ? undefined : campaign.type === "MARKETING" ? preview.data.reachable : preview.data.total
  const test = useApiMutation((client, email: string) => client.campaigns.test({ params: { id: campaign.id }, payload: { email } }))
  const send = useApiMutation(
    (client, scheduledFor: string | null) => client.campaigns.send({ params: { id: campaign.id }, payload: { scheduledFor } }),
    { invalidates, onSuccess: () => setConfirming(false) }
  )
  return (
    <Section title="Send">
      <div className="grid gap-4 lg:grid-cols-2">
        <Card title="Send a test">
          <form
            className="flex flex-wrap items-end gap-2"
            onSubmit={(event) => {
              event.preventDefault()
              test.mutate(testTo)
            }}
          >
            <div className="min-w-0 flex-1">
              <Field label="Test address" type="email" value={testTo} onChange={changeClearing(test, setTestTo)} required error={fieldError(test.error, "email")} />
            </div>
            <button type="submit" className="btn-secondary" disabled={test.isPending}>Send test</button>
          </form>
          {test.data && <div className="mt-3"><Notice>Test sent to {test.data.data.email}.</Notice></div>}
          <MutationError error={test.error} fields={["email"]} />
        </Card>
        <Card title={campaign.status === "SCHEDULED" ? "Reschedule or send now" : "Schedule or send now"}>
          <p className="mb-3 text-sm text-slate-600">
            <span data-testid="recipient-count" className="font-semibold tabular-nums text-slate-900">{recipients === undefined ? "…" : recipients.toLocaleString()}</span> {nounFor(recipients ?? 0, "recipient")} now.
          </p>
          <form
            className="flex flex-wrap items-end gap-2"
            onSubmit={(event) => {
              event.preventDefault()
              if (when !== "") send.mutate(localToIso(when))
            }}
          >
            <div className="min-w-0 flex-1">
              <Field label="Send at" type="datetime-local" value={when} onChange={(event) => setWhen(event.target.value)} hint={`In your time zone, ${timeZone()}`} />
            </div>
            <button type="submit" className="btn-secondary" disabled={when === "" || send.isPending}>Schedule</button>
          </form>
          <button type="button" className="btn-primary mt-4" onClick={() => setConfirming(true)}>Send now…</button>
          <MutationError error={confirming ? null : send.error} />
        </Card>
      </div>
      <Confirm
        open={confirming}
        title={`Send ${campaign.name} now?`}
        action="Send now"
        busy={send.isPending}
        onConfirm={() => send.mutate(null)}
        onCancel={() => setConfirming(false)}
      >
        <p>
          It goes to {recipients === undefined ? "its audience" : <strong>{recipients.toLocaleString()} {recipients === 1 ? "recipient" : "recipients"}</strong>} right away, as “{campaign.subject}” from {campaign.from}.
        </p>
        <MutationError error={send.error} />
      </Confirm>
    </Section>
  )
}
