/**
 * A campaign's recipients by email (GET /campaigns/:id/recipients): before sending, who it would go to
 * now; once sending started, the audience it froze, with the mail each got or why it was skipped.
 */
import { useState } from "react"
import { Link } from "react-router"
import { useApiQuery, useProjectId } from "../../api/hooks.ts"
import { Badge, cell, Section, Table } from "../../components/Page.tsx"
import { NumberedPager } from "../../components/Pager.tsx"
import { Empty, QueryView } from "../../components/States.tsx"

const tone = (status: string) =>
  status === "DELIVERED" || status === "OPENED" || status === "CLICKED" || status === "SENT"
    ? "green"
    : status === "BOUNCED" || status === "FAILED" || status === "COMPLAINED"
    ? "red"
    : status === "SKIPPED"
    ? "amber"
    : "slate"

export function Recipients({ campaignId, status }: { readonly campaignId: string; readonly status: string }) {
  const projectId = useProjectId()
  const [page, setPage] = useState(1)
  const recipients = useApiQuery(
    // Asked again as the status changes: sending freezes the audience.
    ["campaigns", "recipients", campaignId, status, page],
    // Refetched with the campaign's live updates (CampaignPage).
    (client) => client.campaigns.recipients({ params: { id: campaignId }, query: { page: String(page), pageSize: "25" } })
  )
  return (
    <Section title="Recipients">
      <QueryView
        query={recipients}
        isEmpty={(result) => result.total === 0}
        empty={<Empty title="No recipients">No contact is in the audience{" "}(or every one is unsubscribed or suppressed).</Empty>}
      >
        {(result) => (
          <>
            <p className="mb-2 text-sm text-slate-600" data-testid="recipients-summary">
              {result.frozen
                ? `${result.total.toLocaleString()} ${result.total === 1 ? "contact" : "contacts"} in the audience when sending started.`
                : `Sent now, it would go to ${result.total.toLocaleString()} ${result.total === 1 ? "contact" : "contacts"}.`}
            </p>
            <Table label="Recipients" head={result.frozen ? ["Email", "Mail"] : ["Email"]}>
              {result.data.map((recipient) => (
                <tr key={recipient.contactId}>
                  <td className={`${cell} break-all`}>
                    {recipient.email === null
                      ? <span className="text-slate-500">deleted contact</span>
                      : <Link to={`/p/${projectId}/contacts/${recipient.contactId}`} className="link">{recipient.email}</Link>}
                  </td>
                  {result.frozen && (
                    <td className={cell}>
                      {recipient.status === null
                        ? <span className="text-slate-500">not queued yet</span>
                        : <Badge tone={tone(recipient.status)}>{recipient.skipped ? `skipped: ${recipient.skipped}` : recipient.status.toLowerCase()}</Badge>}
                    </td>
                  )}
                </tr>
              ))}
            </Table>
            <NumberedPager page={page} totalPages={result.totalPages} onPage={setPage} />
          </>
        )}
      </QueryView>
    </Section>
  )
}
