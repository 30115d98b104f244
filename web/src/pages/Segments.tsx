/** Segments: the list with member counts, and one segment with its condition and first members. */
import { useState } from "react"
import { Link, useParams } from "react-router"
import { useApiQuery, useProjectId } from "../api/hooks.ts"
import { JsonBlock } from "../components/Json.tsx"
import { Badge, cell, Fields, formatDate, Page, Section, Table } from "../components/Page.tsx"
import { NumberedPager } from "../components/Pager.tsx"
import { Empty, QueryView } from "../components/States.tsx"

export function SegmentsPage() {
  const projectId = useProjectId()
  const query = useApiQuery(["segments", "list"], (client) => client.segments.list({}))
  return (
    <Page title="Segments">
      <QueryView query={query} isEmpty={(list) => list.length === 0} empty={<Empty title="No segments yet">Create one with <code>POST /segments</code>.</Empty>}>
        {(list) => (
          <Table label="Segments" head={["Name", "Type", "Members", "Updated"]}>
            {list.map((segment) => (
              <tr key={segment.id} className="hover:bg-slate-50">
                <td className={cell}><Link to={`/p/${projectId}/segments/${segment.id}`} className="link">{segment.name}</Link></td>
                <td className={cell}><Badge tone={segment.type === "DYNAMIC" ? "indigo" : "slate"}>{segment.type.toLowerCase()}</Badge></td>
                <td className={`${cell} tabular-nums`}>{segment.memberCount.toLocaleString()}</td>
                <td className={`${cell} whitespace-nowrap text-slate-600`}>{formatDate(segment.updatedAt)}</td>
              </tr>
            ))}
          </Table>
        )}
      </QueryView>
    </Page>
  )
}

export function SegmentPage() {
  const { segmentId = "" } = useParams()
  const projectId = useProjectId()
  const [page, setPage] = useState(1)
  const segment = useApiQuery(["segments", "get", segmentId], (client) => client.segments.get({ params: { id: segmentId } }))
  const members = useApiQuery(
    ["segments", "contacts", segmentId, page],
    (client) => client.segments.contacts({ params: { id: segmentId }, query: { page: String(page), pageSize: "20" } })
  )
  return (
    <QueryView query={segment}>
      {(segment) => (
        <Page title={segment.name}>
          <p className="-mt-4 mb-6 text-sm"><Link to={`/p/${projectId}/segments`} className="link">All segments</Link></p>
          <Section title="Segment">
            <Fields
              items={[
                ["Type", <Badge tone={segment.type === "DYNAMIC" ? "indigo" : "slate"}>{segment.type.toLowerCase()}</Badge>],
                ["Members", segment.memberCount.toLocaleString()],
                ["Tracks entries and exits", segment.trackMembership ? "Yes" : "No"],
                ["Description", segment.description ?? "—"],
                ["Updated", formatDate(segment.updatedAt)]
              ]}
            />
          </Section>
          {segment.condition !== null && (
            <Section title="Condition">
              <JsonBlock value={segment.condition} label="Condition" />
            </Section>
          )}
          <Section title="Members">
            <QueryView query={members} isEmpty={(result) => result.total === 0} empty={<Empty title="No members" />}>
              {(result) => (
                <>
                  <Table label="Members" head={["Email", "Subscription"]}>
                    {result.data.map((contact) => (
                      <tr key={contact.id}>
                        <td className={cell}><Link to={`/p/${projectId}/contacts/${contact.id}`} className="link break-all">{contact.email}</Link></td>
                        <td className={cell}>{contact.subscribed ? <Badge tone="green">Subscribed</Badge> : <Badge>Unsubscribed</Badge>}</td>
                      </tr>
                    ))}
                  </Table>
                  <NumberedPager page={page} totalPages={result.totalPages} onPage={setPage} />
                </>
              )}
            </QueryView>
          </Section>
        </Page>
      )}
    </QueryView>
  )
}
