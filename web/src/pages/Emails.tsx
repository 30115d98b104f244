/**
 * The mail the project sent and received (marked), newest first (GET /emails, cursor pages), filtered by direction, status, recipient,
 * template, campaign and day; and one email (GET /emails/:id): its body rendered in a sandboxed iframe
 * (without its open pixel and tracked links, so reading it counts nothing), the text part, the headers,
 * the attachments, its timeline and the raw message to download. Under local delivery this is the inbox.
 */
import { type FormEvent, useState } from "react"
import { Link, useParams, useSearchParams } from "react-router"
import { EMAIL_STATUSES } from "../../../src/domain/email.ts"
import type { EmailDetail } from "../../../src/http/api/emails.ts"
import { useApiMutation, useApiQuery, useProjectId } from "../api/hooks.ts"
import { mailChange, useLiveRefresh } from "../api/live.tsx"
import { useDelivery } from "../api/session.ts"
import { MutationError } from "../components/Form.tsx"
import { Badge, cell, Fields, formatDate, Page, Section, Table, wideOnly } from "../components/Page.tsx"
import { useCursorPages } from "../components/Pager.tsx"
import { saveFile } from "../components/saveFile.ts"
import { Empty, QueryView } from "../components/States.tsx"

const PAGE_SIZE = 25

export const statusTone = (status: string) =>
  status === "DELIVERED" || status === "SENT" ? "green"
    : status === "OPENED" || status === "CLICKED" ? "indigo"
    : status === "BOUNCED" || status === "COMPLAINED" || status === "FAILED" ? "red"
    : status === "SUPPRESSED" || status === "PENDING" || status === "SENDING" ? "amber"
    : status === "RECEIVED" ? "indigo"
    : "slate"

const FILTERS = ["direction", "status", "recipient", "templateId", "campaignId", "since", "until"] as const

/** A day picked in a date input, as the instant the API reads (its start, or the next day's for `until`). */
const dayToInstant = (day: string, end: boolean) => {
  const start = Date.parse(`${day}T00:00:00Z`)
  return Number.isFinite(start) ? new Date(start + (end ? 86_400_000 : 0)).toISOString() : undefined
}

export function EmailsPage() {
  const projectId = useProjectId() ?? ""
  const [params, setParams] = useSearchParams()
  const filters = Object.fromEntries(FILTERS.flatMap((name) => (params.get(name) ? [[name, params.get(name)!]] : [])))
  const filterKey = JSON.stringify(filters)
  const { cursor, pager } = useCursorPages(filterKey)
  const query = {
    limit: String(PAGE_SIZE),
    ...(filters.direction ? { direction: filters.direction } : {}),
    ...(filters.status ? { status: filters.status } : {}),
    ...(filters.recipient ? { recipient: filters.recipient } : {}),
    ...(filters.templateId ? { templateId: filters.templateId } : {}),
    ...(filters.campaignId ? { campaignId: filters.campaignId } : {}),
    ...(filters.since ? { since: dayToInstant(filters.since, false) } : {}),
    ...(filters.until ? { until: dayToInstant(filters.until, true) } : {}),
    ...(cursor ? { cursor } : {})
  }
  const emails = useApiQuery(["emails", "list", filterKey, cursor ?? null], (client) => client.emails.list({ query }))
  // New mail and status changes show as they happen.
  useLiveRefresh(mailChange(), [["emails", "list"]])
  const templates = useApiQuery(["templates", "list", "all"], (client) => client.templates.list({ query: { pageSize: "100" } }))
  const campaigns = useApiQuery(["campaigns", "list", "all"], (client) => client.campaigns.list({ query: { pageSize: "100" } }))
  const templateNames = new Map((templates.data?.data ?? []).map((template) => [template.id, template.name]))
  const campaignNames = new Map((campaigns.data?.data ?? []).map((campaign) => [campaign.id, campaign.name]))
  const local = useDelivery()?.mode === "local"

  const setFilter = (name: (typeof FILTERS)[number], value: string) =>
    setParams((current) => {
      const next = new URLSearchParams(current)
      if (value) next.set(name, value)
      else next.delete(name)
      return next
    }, { replace: true })

  return (
    <Page title="Emails">
      <Filters
        values={filters}
        onChange={setFilter}
        templates={[...templateNames]}
        campaigns={[...campaignNames]}
        onClear={() => setParams({}, { replace: true })}
      />
      <QueryView
        query={emails}
        isEmpty={(page) => page.data.length === 0}
        empty={
          <Empty title={Object.keys(filters).length > 0 ? "No email matches these filters" : "No email sent yet"}>
            {local
              ? "Mail sent with /v1/send, campaigns and workflows shows here; under local delivery this is where you read it."
              : "Mail sent with /v1/send, campaigns and workflows shows here."}
          </Empty>
        }
      >
        {(page) => (
          <>
            <Table label="Emails" head={["Subject", "To", "Status", ["From", wideOnly], ["Source", wideOnly], "Queued"]}>
              {page.data.map((email) => (
                <tr key={email.id}>
                  <td className={cell}>
                    {email.direction === "inbound" && <><Badge tone="indigo">received</Badge>{" "}</>}
                    <Link className="link break-words" to={`/p/${projectId}/emails/${email.id}`}>{email.subject || "(no subject)"}</Link>
                  </td>
                  <td className={`${cell} break-all`}>{email.to}</td>
                  <td className={cell}><Badge tone={statusTone(email.status)}>{email.status.toLowerCase()}</Badge></td>
                  <td className={`${cell} ${wideOnly} break-all`}>{email.from}</td>
                  <td className={`${cell} ${wideOnly}`}>
                    <Source email={email} projectId={projectId} templateNames={templateNames} campaignNames={campaignNames} />
                  </td>
                  <td className={`${cell} whitespace-nowrap`}><time dateTime={email.createdAt}>{formatDate(email.createdAt)}</time></td>
                </tr>
              ))}
            </Table>
            {pager(page)}
          </>
        )}
      </QueryView>
    </Page>
  )
}

type Filter = Partial<Record<(typeof FILTERS)[number], string>>

function Filters({ values, onChange, onClear, templates, campaigns }: {
  readonly values: Filter
  readonly onChange: (name: (typeof FILTERS)[number], value: string) => void
  readonly onClear: () => void
  readonly templates: ReadonlyArray<readonly [string, string]>
  readonly campaigns: ReadonlyArray<readonly [string, string]>
}) {
  const [recipient, setRecipient] = useState(values.recipient ?? "")
  const submit = (event: FormEvent) => {
    event.preventDefault()
    onChange("recipient", recipient.trim())
  }
  const select = (name: "direction" | "status" | "templateId" | "campaignId", label: string, options: ReadonlyArray<readonly [string, string]>) => (
    <div>
      <label htmlFor={`emails-${name}`} className="block text-sm font-medium text-slate-700">{label}</label>
      <select id={`emails-${name}`} className="input mt-1" value={values[name] ?? ""} onChange={(event) => onChange(name, event.target.value)}>
        <option value="">Any</option>
        {options.map(([value, text]) => <option key={value} value={value}>{text}</option>)}
      </select>
    </div>
  )
  const day = (name: "since" | "until", label: string) => (
    <div>
      <label htmlFor={`emails-${name}`} className="block text-sm font-medium text-slate-700">{label}</label>
      <input id={`emails-${name}`} type="date" className="input mt-1" value={values[name] ?? ""} onChange={(event) => onChange(name, event.target.value)} />
    </div>
  )
  return (
    <div className="mb-6 rounded-lg border border-slate-200 bg-white p-4">
      <form role="search" aria-label="Filter emails" onSubmit={submit} className="mb-4 flex flex-col gap-2 sm:flex-row sm:items-end">
        <div className="flex-1">
          <label htmlFor="emails-recipient" className="block text-sm font-medium text-slate-700">Recipient</label>
          <input id="emails-recipient" className="input mt-1" type="search" value={recipient} placeholder="Part of an address" onChange={(event) => setRecipient(event.target.value)} />
        </div>
        <button type="submit" className="btn-secondary">Search</button>
      </form>
      <div className="grid grid-cols-1 gap-3 sm:grid-cols-2 lg:grid-cols-6">
        {select("direction", "Direction", [["outbound", "sent"], ["inbound", "received"]])}
        {select("status", "Status", EMAIL_STATUSES.map((status) => [status, status.toLowerCase()]))}
        {select("templateId", "Template", templates)}
        {select("campaignId", "Campaign", campaigns)}
        {day("since", "From day")}
        {day("until", "To day")}
      </div>
      {Object.keys(values).length > 0 && (
        <button type="button" className="link mt-3 text-sm" onClick={() => {
          setRecipient("")
          onClear()
        }}>Clear filters</button>
      )}
    </div>
  )
}

function Source({ email, projectId, templateNames, campaignNames }: {
  readonly email: { readonly templateId: string | null; readonly campaignId: string | null; readonly workflowId: string | null }
  readonly projectId: string
  readonly templateNames: ReadonlyMap<string, string>
  readonly campaignNames: ReadonlyMap<string, string>
}) {
  if (email.campaignId) {
    return <Link className="link" to={`/p/${projectId}/campaigns/${email.campaignId}`}>{campaignNames.get(email.campaignId) ?? "Campaign"}</Link>
  }
  if (email.workflowId) return <Link className="link" to={`/p/${projectId}/workflows/${email.workflowId}`}>Workflow</Link>
  if (email.templateId) {
    return <Link className="link" to={`/p/${projectId}/templates/${email.templateId}`}>{templateNames.get(email.templateId) ?? "Template"}</Link>
  }
  return <span className="text-slate-600">Sent directly</span>
}

type Detail = typeof EmailDetail.Type

export function EmailPage() {
  const { emailId = "" } = useParams()
  const projectId = useProjectId() ?? ""
  const email = useApiQuery(["emails", "get", emailId], (client) => client.emails.get({ params: { id: emailId } }))
  // Its status and timeline follow its events (sent, delivered, opened, ...).
  useLiveRefresh(mailChange(emailId), [["emails", "get", emailId]])
  const download = useApiMutation((client, id: string) => client.emails.raw({ params: { id } }), {
    onSuccess: (raw) => saveFile(raw, "message/rfc822", `${emailId}.eml`)
  })
  return (
    <Page
      title={email.data ? email.data.subject || "(no subject)" : "Email"}
      actions={
        <>
          <Link className="btn-secondary" to={`/p/${projectId}/emails`}>All emails</Link>
          {email.data?.contentExpiredAt === null && (
            <button type="button" className="btn-secondary" disabled={download.isPending} onClick={() => download.mutate(emailId)}>
              {download.isPending ? "Preparing…" : "Download .eml"}
            </button>
          )}
        </>
      }
    >
      <MutationError error={download.error} />
      <QueryView query={email}>
        {(detail) => <EmailView email={detail} projectId={projectId} />}
      </QueryView>
    </Page>
  )
}

const mailbox = (name: string | null, address: string) => (name ? `${name} <${address}>` : address)

function EmailView({ email, projectId }: { readonly email: Detail; readonly projectId: string }) {
  return (
    <>
      <div className="mb-8 grid grid-cols-1 gap-6 lg:grid-cols-[minmax(0,1fr)_18rem]">
        <Fields
          items={[
            // Received mail's contact is its sender; sent mail's its recipient.
            ["From", email.direction === "inbound" && email.contactId
              ? <Link className="link" to={`/p/${projectId}/contacts/${email.contactId}`}>{mailbox(email.fromName, email.from)}</Link>
              : mailbox(email.fromName, email.from)],
            ["To", email.direction === "outbound" && email.contactId ? <Link className="link" to={`/p/${projectId}/contacts/${email.contactId}`}>{mailbox(email.toName, email.to)}</Link> : mailbox(email.toName, email.to)],
            ["Direction", email.direction === "inbound" ? "received" : "sent"],
            ...(email.inReplyTo ? [["In reply to", <Link className="link" to={`/p/${projectId}/emails/${email.inReplyTo}`}>the email it answers</Link>] as const] : []),
            ...(email.authentication
              ? [["Authentication", `SPF ${email.authentication.spf}, DKIM ${email.authentication.dkim}` +
                `${email.authentication.dkimDomains.length > 0 ? ` (${email.authentication.dkimDomains.join(", ")})` : ""}, DMARC ${email.authentication.dmarc}`] as const]
              : []),
            ...(email.replyTo ? [["Reply to", email.replyTo] as const] : []),
            ["Status", <Badge tone={statusTone(email.status)}>{email.status.toLowerCase()}</Badge>],
            ["Kind", email.type.toLowerCase()],
            ["Message-ID", <span className="break-all font-mono text-sm">{email.messageId}</span>],
            ...(email.error ? [["Error", email.error] as const] : [])
          ]}
        />
        <section aria-label="Timeline">
          <h2 className="mb-3 text-lg font-semibold text-slate-800">Timeline</h2>
          <ol className="space-y-2 rounded-lg border border-slate-200 bg-white p-4 text-sm">
            {email.timeline.map((entry) => (
              <li key={entry.step} className="flex flex-wrap items-center justify-between gap-2">
                <Badge tone={statusTone(entry.step === "QUEUED" ? "PENDING" : entry.step)}>{entry.step.toLowerCase()}</Badge>
                {entry.at ? <time dateTime={entry.at} className="text-slate-600">{formatDate(entry.at)}</time> : null}
                {entry.detail ? <p className="w-full break-words text-slate-600">{entry.detail}</p> : null}
              </li>
            ))}
          </ol>
        </section>
      </div>
      {email.contentExpiredAt !== null && (
        <p role="status" className="mb-8 rounded-md border border-slate-200 bg-white px-4 py-3 text-sm text-slate-700">
          This email's content is no longer kept (since {formatDate(email.contentExpiredAt)}): only its record and timeline remain.
        </p>
      )}
      <Section title="Body">
        {email.html === null || email.previewHtml === null
          ? <p className="text-sm text-slate-600">This body is over the 5 MB cap (stored before the caps): it is not shown.</p>
          : email.html === ""
          ? <p className="text-sm text-slate-600">This email has no HTML body.</p>
          : (
            // sandbox with no permissions: the mail's HTML runs no script and cannot reach this page.
            <iframe title={`Body of “${email.subject}”`} sandbox="" srcDoc={email.previewHtml} className="h-[32rem] w-full rounded-lg border border-slate-200 bg-white" />
          )}
      </Section>
      <Section title="Text part">
        {email.text === null
          ? <p className="text-sm text-slate-600">The HTML has no text, so none was sent beside it.</p>
          : <pre className="max-h-96 overflow-auto whitespace-pre-wrap break-words rounded-lg border border-slate-200 bg-white p-4 text-sm text-slate-800">{email.text}</pre>}
      </Section>
      {email.attachments.length > 0 && (
        <Section title="Attachments">
          <ul className="list-inside list-disc text-sm text-slate-800">
            {email.attachments.map((attachment, index) => (
              <li key={index}>{attachment.filename} <span className="text-slate-600">({attachment.contentType ?? "unknown type"}, {attachment.size.toLocaleString()} bytes{attachment.disposition === "inline" ? `, shown in the body as cid:${attachment.contentId}` : ""})</span></li>
            ))}
          </ul>
        </Section>
      )}
      <Section title="Headers">
        <Table label="Headers" head={["Name", "Value"]}>
          {email.headers.map((header, index) => (
            <tr key={index}>
              <th scope="row" className={`${cell} whitespace-nowrap text-left font-mono font-medium text-slate-700`}>{header.name}</th>
              <td className={`${cell} break-all font-mono text-slate-800`}>{header.value}</td>
            </tr>
          ))}
        </Table>
      </Section>
    </>
  )
}
