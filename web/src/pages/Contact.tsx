/** One contact: its fields, its custom data with types, and its events (newest first, cursor pages). */
import { useState } from "react"
import { Link, useParams } from "react-router"
import { useApiQuery, useProjectId } from "../api/hooks.ts"
import { describeValue, typeOf } from "../components/Json.tsx"
import { Badge, cell, Fields, formatDate, Page, Section, Table } from "../components/Page.tsx"
import { Empty, QueryView } from "../components/States.tsx"

export function ContactPage() {
  const { contactId = "" } = useParams()
  const projectId = useProjectId()
  const contact = useApiQuery(["contacts", "get", contactId], (client) => client.contacts.get({ params: { id: contactId } }))
  return (
    <QueryView query={contact}>
      {(contact) => (
        <Page title={contact.email}>
          <p className="-mt-4 mb-6 text-sm"><Link to={`/p/${projectId}/contacts`} className="link">All contacts</Link></p>
          <Section title="Contact">
            <Fields
              items={[
                ["Email", <span className="break-all">{contact.email}</span>],
                ["Subscription", contact.subscribed ? <Badge tone="green">Subscribed</Badge> : <Badge>Unsubscribed</Badge>],
                ["Created", formatDate(contact.createdAt)],
                ["Updated", formatDate(contact.updatedAt)],
                ["Id", <code className="font-mono text-sm">{contact.id}</code>]
              ]}
            />
          </Section>
          <Section title="Data">
            {Object.keys(contact.data).length === 0
              ? <Empty title="No custom data" />
              : (
                <Table label="Custom data" head={["Field", "Type", "Value"]}>
                  {Object.entries(contact.data).map(([key, value]) => (
                    <tr key={key}>
                      <td className={`${cell} font-mono`}>{key}</td>
                      <td className={`${cell} text-slate-600`}>{typeOf(value)}</td>
                      <td className={`${cell} break-all font-mono`}>{describeValue(value)}</td>
                    </tr>
                  ))}
                </Table>
              )}
          </Section>
          <ContactEvents contactId={contact.id} />
        </Page>
      )}
    </QueryView>
  )
}

function ContactEvents({ contactId }: { readonly contactId: string }) {
  const [cursor, setCursor] = useState<string | undefined>(undefined)
  const events = useApiQuery(
    ["events", "forContact", contactId, cursor],
    (client) => client.events.forContact({ params: { contactId }, query: { limit: "50", ...(cursor ? { cursor } : {}) } })
  )
  return (
    <Section title="Events">
      <QueryView query={events} isEmpty={(page) => page.data.length === 0} empty={<Empty title="No events yet" />}>
        {(page) => (
          <>
            <ol className="space-y-2">
              {page.data.map((event) => (
                <li key={event.id} className="rounded-lg border border-slate-200 bg-white px-4 py-3">
                  <div className="flex flex-wrap items-baseline justify-between gap-2">
                    <span className="font-mono text-sm font-medium">{event.name}</span>
                    <time className="text-sm text-slate-500" dateTime={event.createdAt}>{formatDate(event.createdAt)}</time>
                  </div>
                  {Object.keys(event.data).length > 0 && (
                    <p className="mt-1 break-all font-mono text-xs text-slate-600">{JSON.stringify(event.data)}</p>
                  )}
                </li>
              ))}
            </ol>
            {(cursor !== undefined || page.hasMore) && (
              <div className="mt-3 flex gap-2">
                {cursor !== undefined && <button type="button" className="btn-secondary" onClick={() => setCursor(undefined)}>Newest</button>}
                {page.hasMore && page.cursor && <button type="button" className="btn-secondary" onClick={() => setCursor(page.cursor ?? undefined)}>Older</button>}
              </div>
            )}
          </>
        )}
      </QueryView>
    </Section>
  )
}
