/** Campaigns: the list with their status and progress, and one campaign with its stats. */
import { useState } from "react"
import { Link, useParams } from "react-router"
import { useApiQuery, useProjectId } from "../api/hooks.ts"
import { Badge, cell, Fields, formatDate, Page, Section, Table } from "../components/Page.tsx"
import { NumberedPager } from "../components/Pager.tsx"
import { Empty, QueryView } from "../components/States.tsx"

const statusTone = (status: string) =>
  status === "SENT" ? "green" : status === "SENDING" || status === "SCHEDULED" ? "indigo" : status === "CANCELLED" ? "red" : "slate"

const percent = (rate: number) => `${(rate * 100).toFixed(1)} %`

export function CampaignsPage() {
  const projectId = useProjectId()
  const [page, setPage] = useState(1)
  const query = useApiQuery(["campaigns", "list", page], (client) => client.campaigns.list({ query: { page: String(page), pageSize: "20" } }))
  return (
    <Page title="Campaigns">
      <QueryView query={query} isEmpty={(result) => result.total === 0} empty={<Empty title="No campaigns yet">Create one with <code>POST /campaigns</code>.</Empty>}>
        {(result) => (
          <>
            <Table label="Campaigns" head={["Name", "Status", "Recipients", "Sent", "Opened", "Created"]}>
              {result.data.map((campaign) => (
                <tr key={campaign.id} className="hover:bg-slate-50">
                  <td className={cell}><Link to={`/p/${projectId}/campaigns/${campaign.id}`} className="link">{campaign.name}</Link></td>
                  <td className={cell}><Badge tone={statusTone(campaign.status)}>{campaign.status.toLowerCase()}</Badge></td>
                  <td className={`${cell} tabular-nums`}>{campaign.totalRecipients.toLocaleString()}</td>
                  <td className={`${cell} tabular-nums`}>{campaign.sentCount.toLocaleString()}</td>
                  <td className={`${cell} tabular-nums`}>{campaign.openedCount.toLocaleString()}</td>
                  <td className={`${cell} whitespace-nowrap text-slate-600`}>{formatDate(campaign.createdAt)}</td>
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

export function CampaignPage() {
  const { campaignId = "" } = useParams()
  const projectId = useProjectId()
  const campaign = useApiQuery(["campaigns", "get", campaignId], (client) => client.campaigns.get({ params: { id: campaignId } }))
  const stats = useApiQuery(["campaigns", "stats", campaignId], (client) => client.campaigns.stats({ params: { id: campaignId } }), {
    refetchInterval: 10_000
  })
  return (
    <QueryView query={campaign}>
      {(campaign) => (
        <Page title={campaign.name}>
          <p className="-mt-4 mb-6 text-sm"><Link to={`/p/${projectId}/campaigns`} className="link">All campaigns</Link></p>
          <Section title="Campaign">
            <Fields
              items={[
                ["Status", <Badge tone={statusTone(campaign.status)}>{campaign.status.toLowerCase()}</Badge>],
                ["Subject", campaign.subject],
                ["From", campaign.fromName ? `${campaign.fromName} <${campaign.from}>` : campaign.from],
                ["Audience", campaign.segmentId !== null ? <SegmentLink id={campaign.segmentId} /> : campaign.audienceType === "ALL" ? "All subscribed contacts" : "Contacts matching a filter"],
                ["Scheduled for", formatDate(campaign.scheduledFor)],
                ["Sent", formatDate(campaign.sentAt)]
              ]}
            />
          </Section>
          <Section title="Progress">
            <QueryView query={stats}>
              {(stats) => (
                <dl className="grid grid-cols-2 gap-3 sm:grid-cols-4">
                  {([
                    ["Recipients", stats.totalRecipients.toLocaleString()],
                    ["Sent", stats.sent.toLocaleString()],
                    ["Delivered", `${stats.delivered.toLocaleString()} (${percent(stats.rates.delivery)})`],
                    ["Opened", `${stats.opened.toLocaleString()} (${percent(stats.rates.open)})`],
                    ["Clicked", `${stats.clicked.toLocaleString()} (${percent(stats.rates.click)})`],
                    ["Bounced", `${stats.bounced.toLocaleString()} (${percent(stats.rates.bounce)})`],
                    ["Failed", stats.failed.toLocaleString()],
                    ["Pending", stats.pending.toLocaleString()]
                  ] as const).map(([label, value]) => (
                    <div key={label} className="rounded-lg border border-slate-200 bg-white p-4">
                      <dt className="text-sm text-slate-500">{label}</dt>
                      <dd className="mt-1 text-lg font-semibold tabular-nums">{value}</dd>
                    </div>
                  ))}
                </dl>
              )}
            </QueryView>
          </Section>
        </Page>
      )}
    </QueryView>
  )
}

/** The campaign's segment by name (the segment page's own query, so its cache is shared). */
function SegmentLink({ id }: { readonly id: string }) {
  const projectId = useProjectId()
  const segment = useApiQuery(["segments", "get", id], (client) => client.segments.get({ params: { id } }))
  return (
    <Link to={`/p/${projectId}/segments/${id}`} className="link">
      Segment {segment.data?.name ?? id}
    </Link>
  )
}
