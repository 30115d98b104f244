/**
 * One contact: its fields with a subscription switch, its custom data (shown with types, edited by a
 * typed editor), the segments it is in and its workflow executions, and its timeline (mail, events,
 * subscription changes: the activity feed for the contact, newest first, cursor pages). Deleting asks first.
 */
import { useState } from "react"
import { Link, useNavigate, useParams } from "react-router"
import { useApiMutation, useApiQuery, useProjectId } from "../api/hooks.ts"
import { Confirm } from "../components/Confirm.tsx"
import { DataEditor, valueTypeOf } from "../components/DataEditor.tsx"
import { MutationError } from "../components/Form.tsx"
import { DataPairs } from "../components/Json.tsx"
import { displayValue, readableEventData, withoutIds } from "../components/words.ts"
import { Badge, cell, Fields, formatDate, Page, Section, Table, wideOnly } from "../components/Page.tsx"
import { Empty, QueryView } from "../components/States.tsx"

const CONTACTS = ["contacts"]

export function ContactPage() {
  const { contactId = "" } = useParams()
  const projectId = useProjectId()
  const navigate = useNavigate()
  const [deleting, setDeleting] = useState(false)
  const [editing, setEditing] = useState(false)
  const contact = useApiQuery(["contacts", "get", contactId], (client) => client.contacts.get({ params: { id: contactId } }))
  const update = useApiMutation(
    (client, payload: { subscribed?: boolean; data?: Record<string, unknown> }) => client.contacts.update({ params: { id: contactId }, payload }),
    { invalidates: [CONTACTS, ["activity"]], onSuccess: () => setEditing(false) }
  )
  const remove = useApiMutation((client, id: string) => client.contacts.delete({ params: { id } }), {
    invalidates: [["contacts", "list"]],
    onSuccess: () => void navigate(`/p/${projectId}/contacts`, { replace: true })
  })
  return (
    <QueryView query={contact}>
      {(contact) => (
        <Page
          title={contact.email}
          actions={<button type="button" className="btn-danger" onClick={() => setDeleting(true)}>Delete contact</button>}
        >
          <p className="-mt-4 mb-6 text-sm"><Link to={`/p/${projectId}/contacts`} className="link">All contacts</Link></p>
          <Section title="Contact">
            <Fields
              items={[
                ["Email", <span className="break-all">{contact.email}</span>],
                [
                  "Subscription",
                  <label className="inline-flex cursor-pointer items-center gap-3">
                    <input
                      type="checkbox"
                      role="switch"
                      className="peer sr-only"
                      checked={contact.subscribed}
                      disabled={update.isPending}
                      aria-label="Subscribed"
                      onChange={(event) => update.mutate({ subscribed: event.target.checked })}
                    />
                    <span
                      aria-hidden="true"
                      className="relative h-6 w-11 rounded-full bg-slate-300 transition peer-checked:bg-green-600 peer-focus-visible:ring-2 peer-focus-visible:ring-indigo-500 peer-focus-visible:ring-offset-2 after:absolute after:left-0.5 after:top-0.5 after:size-5 after:rounded-full after:bg-white after:shadow after:transition peer-checked:after:translate-x-5"
                    />
                    {contact.subscribed ? <Badge tone="green">Subscribed</Badge> : <Badge>Unsubscribed</Badge>}
                  </label>
                ],
                ["Created", formatDate(contact.createdAt)],
                ["Updated", formatDate(contact.updatedAt)],
                ["Id", <code className="break-all font-mono text-sm">{contact.id}</code>]
              ]}
            />
            {!editing && <MutationError error={update.error} />}
          </Section>
          <Section title="Data">
            {editing
              ? (
                <DataEditor
                  initial={contact.data}
                  busy={update.isPending}
                  error={update.error}
                  onSave={(data) => update.mutate({ data })}
                  onCancel={() => {
                    update.reset()
                    setEditing(false)
                  }}
                />
              )
              : (
                <>
                  {Object.keys(contact.data).length === 0
                    ? <Empty title="No custom data" />
                    : (
                      <Table label="Custom data" head={["Field", "Type", "Value"]}>
                        {Object.entries(contact.data).map(([key, value]) => (
                          <tr key={key}>
                            <td className={`${cell} break-all font-mono`}>{key}</td>
                            <td className={`${cell} text-slate-600`}>{valueTypeOf(value)}</td>
                            <td className={`${cell} break-all font-mono`}>{displayValue(value)}</td>
                          </tr>
                        ))}
                      </Table>
                    )}
                  <button type="button" className="btn-secondary mt-3" onClick={() => setEditing(true)}>Edit data</button>
                </>
              )}
          </Section>
          <Memberships contactId={contact.id} />
          <Timeline contactId={contact.id} />
          <Confirm
            open={deleting}
            title={`Delete ${contact.email}?`}
            action="Delete"
            danger
            busy={remove.isPending}
            onConfirm={() => remove.mutate(contact.id)}
            onCancel={() => setDeleting(false)}
          >
            The contact, its data and its place in segments go at once; its running workflow executions are cancelled. This cannot be undone.
            <MutationError error={remove.error} />
          </Confirm>
        </Page>
      )}
    </QueryView>
  )
}

const executionTone = (status: string) =>
  status === "COMPLETED" ? "green" : status === "FAILED" ? "red" : status === "RUNNING" || status === "WAITING" ? "indigo" : "slate"

function Memberships({ contactId }: { readonly contactId: string }) {
  const projectId = useProjectId()
  const memberships = useApiQuery(["contacts", "memberships", contactId], (client) => client.contacts.memberships({ params: { id: contactId } }))
  return (
    <>
      <Section title="Segments">
        <QueryView query={memberships} isEmpty={(found) => found.segments.length === 0} empty={<Empty title="Not in any segment" />}>
          {({ segments }) => (
            <ul className="flex flex-wrap gap-2" aria-label="Segments of the contact">
              {segments.map((segment) => (
                <li key={segment.id} className="rounded-full border border-slate-200 bg-white px-3 py-1 text-sm">
                  <Link to={`/p/${projectId}/segments/${segment.id}`} className="link">{segment.name}</Link>
                  <span className="ml-2 text-xs text-slate-500">since {formatDate(segment.enteredAt)}</span>
                </li>
              ))}
            </ul>
          )}
        </QueryView>
      </Section>
      <Section title="Workflow executions">
        <QueryView query={memberships} isEmpty={(found) => found.executions.length === 0} empty={<Empty title="No workflow has run for this contact" />}>
          {({ executions }) => (
            <Table label="Workflow executions" head={["Workflow", "Status", ["Started", wideOnly], ["Finished", wideOnly]]}>
              {executions.map((execution) => (
                <tr key={execution.id}>
                  <td className={`${cell} break-words`}><Link to={`/p/${projectId}/workflows/${execution.workflow.id}`} className="link">{execution.workflow.name}</Link></td>
                  <td className={cell}><Badge tone={executionTone(execution.status)}>{execution.status.toLowerCase()}</Badge></td>
                  <td className={`${cell} ${wideOnly} whitespace-nowrap text-slate-600`}>{formatDate(execution.startedAt)}</td>
                  <td className={`${cell} ${wideOnly} whitespace-nowrap text-slate-600`}>{formatDate(execution.finishedAt)}</td>
                </tr>
              ))}
            </Table>
          )}
        </QueryView>
      </Section>
    </>
  )
}

const timelineTone = (type: string) =>
  type === "email.bounced" || type === "email.complained" || type === "email.failed" || type === "workflow.failed"
    ? "red"
    : type.startsWith("email.") ? "indigo" : type === "contact.unsubscribed" ? "amber" : type === "event" ? "slate" : "green"

/**
 * What an item's data adds to its line: an event's own data all; of the platform's items (mail, workflows,
 * campaigns) not the ids, whose names the line shows, nor the subject shown beside them.
 */
const extraData = (item: { readonly type: string; readonly event?: string | null | undefined; readonly data: Readonly<Record<string, unknown>> }) => {
  if (item.type === "event") return readableEventData(item.event ?? "", item.data)
  const { subject: _shown, ...rest } = withoutIds(item.data)
  return rest
}

/** The contact's mail, events and subscription changes, newest first. */
function Timeline({ contactId }: { readonly contactId: string }) {
  const [cursors, setCursors] = useState<ReadonlyArray<string | undefined>>([])
  const [cursor, setCursor] = useState<string | undefined>(undefined)
  const feed = useApiQuery(
    ["activity", "contact", contactId, cursor],
    (client) => client.activity.feed({ query: { contactId, limit: "30", ...(cursor ? { cursor } : {}) } })
  )
  return (
    <Section title="Timeline">
      <QueryView query={feed} isEmpty={(page) => page.data.length === 0 && cursor === undefined} empty={<Empty title="Nothing has happened yet" />}>
        {(page) => (
          <>
            <ol className="space-y-2" aria-label="Timeline">
              {page.data.map((item) => (
                <li key={`${item.type}-${item.id}`} className="rounded-lg border border-slate-200 bg-white px-4 py-3">
                  <div className="flex flex-wrap items-baseline justify-between gap-2">
                    <span className="flex min-w-0 flex-wrap items-baseline gap-2">
                      <Badge tone={timelineTone(item.type)}>{item.type.replace(".", " ")}</Badge>
                      {item.event && <span className="break-all font-mono text-sm font-medium">{item.event}</span>}
                      {item.subject && <span className="break-words text-sm text-slate-800">{item.subject}</span>}
                      {item.workflow && <span className="break-words text-sm text-slate-600">{item.workflow.name ?? "a workflow"}</span>}
                      {item.campaign && <span className="break-words text-sm text-slate-600">{item.campaign.name ?? "a campaign"}</span>}
                    </span>
                    <time className="text-sm text-slate-500" dateTime={item.occurredAt}>{formatDate(item.occurredAt)}</time>
                  </div>
                  {Object.keys(extraData(item)).length > 0 && (
                    <DataPairs data={extraData(item)} label={`Data of ${item.event ?? item.type}`} />
                  )}
                </li>
              ))}
            </ol>
            {(cursor !== undefined || page.hasMore) && (
              <div className="mt-3 flex gap-2">
                {cursor !== undefined && (
                  <button
                    type="button"
                    className="btn-secondary"
                    onClick={() => {
                      setCursor(cursors.at(-1))
                      setCursors(cursors.slice(0, -1))
                    }}
                  >
                    Newer
                  </button>
                )}
                {page.hasMore && page.cursor && (
                  <button
                    type="button"
                    className="btn-secondary"
                    onClick={() => {
                      setCursors([...cursors, cursor])
                      setCursor(page.cursor ?? undefined)
                    }}
                  >
                    Older
                  </button>
                )}
              </div>
            )}
          </>
        )}
      </QueryView>
    </Section>
  )
}
