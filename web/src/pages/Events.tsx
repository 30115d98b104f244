/**
 * Events: the names the project has seen with how often and when last; one name's usage (segments and
 * workflows that read it) and its recent events with their data; deleting a name and its events, after
 * typing it. Without a chosen name, the project's most recent events.
 */
import { useState } from "react"
import { Link, useSearchParams } from "react-router"
import { useApiMutation, useApiQuery, useProjectId } from "../api/hooks.ts"
import { Confirm } from "../components/Confirm.tsx"
import { MutationError, Notice } from "../components/Form.tsx"
import { cell, formatDate, Page, Section, Table, wideOnly } from "../components/Page.tsx"
import { Pager } from "../components/Pager.tsx"
import { DataPairs } from "../components/Json.tsx"
import { Empty, QueryView } from "../components/States.tsx"
import { countOf, readableEventData } from "../components/words.ts"

export function EventsPage() {
  const [params, setParams] = useSearchParams()
  const chosen = params.get("name")
  const [deleted, setDeleted] = useState<string | null>(null)
  // Deletes are applied by the project's actor shortly after they are accepted: the list follows.
  const query = useApiQuery(["events", "names"], (client) => client.events.names({}), { refetchInterval: 5_000 })
  const choose = (name: string | null) => setParams(name === null ? {} : { name }, { replace: true })
  return (
    <Page title="Events">
      {deleted && <div className="mb-4"><Notice>Deleting every <code>{deleted}</code> event: the name leaves the list once they are gone.</Notice></div>}
      <div className="grid min-w-0 gap-6 lg:grid-cols-2">
        <Section title="Names">
          <QueryView
            query={query}
            isEmpty={(result) => result.names.length === 0}
            empty={<Empty title="No events yet">Track one with <code>POST /v1/track</code>.</Empty>}
          >
            {(result) => (
              <Table label="Event names" head={["Name", "Count", ["Last seen", wideOnly]]}>
                {result.names.map((name) => (
                  <tr key={name.name} className={name.name === chosen ? "bg-indigo-50" : "hover:bg-slate-50"}>
                    <td className={`${cell} break-words font-mono`}>
                      <button type="button" className="link text-left" aria-current={name.name === chosen || undefined} onClick={() => choose(name.name)}>
                        {name.name}
                      </button>
                    </td>
                    <td className={`${cell} tabular-nums`}>{name.count.toLocaleString()}</td>
                    <td className={`${cell} ${wideOnly} whitespace-nowrap text-slate-600`}>{formatDate(name.lastSeenAt)}</td>
                  </tr>
                ))}
              </Table>
            )}
          </QueryView>
        </Section>
        <div className="min-w-0">
          {chosen === null
            ? <Recent name={null} />
            : (
              <EventName
                key={chosen}
                name={chosen}
                onClose={() => choose(null)}
                onDeleted={() => {
                  setDeleted(chosen)
                  choose(null)
                }}
              />
            )}
        </div>
      </div>
    </Page>
  )
}

function EventName({ name, onClose, onDeleted }: { readonly name: string; readonly onClose: () => void; readonly onDeleted: () => void }) {
  const projectId = useProjectId()
  const [confirming, setConfirming] = useState(false)
  const usage = useApiQuery(["events", "usage", name], (client) => client.events.usage({ params: { eventName: name } }))
  const remove = useApiMutation((client) => client.events.delete({ params: { eventName: name } }), {
    invalidates: [["events"]],
    onSuccess: () => {
      setConfirming(false)
      onDeleted()
    }
  })
  return (
    <section aria-label={`Event ${name}`}>
      <div className="mb-3 flex flex-wrap items-center justify-between gap-2">
        <h2 className="break-all font-mono text-lg font-semibold text-slate-800">{name}</h2>
        <div className="flex gap-2">
          <button type="button" className="btn-secondary" onClick={onClose}>All recent events</button>
          <button type="button" className="btn-danger" onClick={() => setConfirming(true)}>Delete…</button>
        </div>
      </div>
      <Section title="Used by">
        <QueryView query={usage}>
          {(usage) =>
            usage.segments.length + usage.workflows.length === 0
              ? <p className="text-sm text-slate-600">No segment or workflow reads this event.</p>
              : (
                <ul className="space-y-1 text-sm" aria-label="Used by">
                  {usage.segments.map((segment) => (
                    <li key={segment.id}>Segment <Link className="link" to={`/p/${projectId}/segments/${segment.id}`}>{segment.name}</Link></li>
                  ))}
                  {usage.workflows.map((workflow) => (
                    <li key={workflow.id}>Workflow <Link className="link" to={`/p/${projectId}/workflows/${workflow.id}`}>{workflow.name}</Link></li>
                  ))}
                </ul>
              )}
        </QueryView>
      </Section>
      <Recent name={name} />
      <Confirm
        open={confirming}
        title={`Delete every ${name} event?`}
        action="Delete events"
        typed={name}
        danger
        busy={remove.isPending}
        onConfirm={() => remove.mutate(undefined)}
        onCancel={() => setConfirming(false)}
      >
        <p>Every event with this name and its counts are deleted, for every contact. Segments and workflows that read it then see none.</p>
        {usage.data && usage.data.segments.length + usage.data.workflows.length > 0 && (
          <p className="mt-2 font-medium text-amber-900">
            Used by {usage.data.segments.length} {usage.data.segments.length === 1 ? "segment" : "segments"} and {usage.data.workflows.length} {usage.data.workflows.length === 1 ? "workflow" : "workflows"}.
          </p>
        )}
        <MutationError error={remove.error} />
      </Confirm>
    </section>
  )
}

/** The newest events (of one name, or all), cursor pages. */
function Recent({ name }: { readonly name: string | null }) {
  const projectId = useProjectId()
  const [cursors, setCursors] = useState<ReadonlyArray<string>>([])
  const cursor = cursors.at(-1)
  const query = useApiQuery(
    ["events", "list", name ?? "", cursor ?? ""],
    (client) => client.events.list({ query: { limit: "20", ...(name === null ? {} : { name }), ...(cursor ? { cursor } : {}) } })
  )
  return (
    <Section title={name === null ? "Recent events" : "Recent events of this name"}>
      <QueryView query={query} isEmpty={(page) => page.data.length === 0} empty={<Empty title="No events" />}>
        {(page) => (
          <>
            <ul aria-label="Recent events" className="space-y-2">
              {page.data.map((event) => (
                <li key={event.id} className="min-w-0 rounded-lg border border-slate-200 bg-white p-3">
                  <div className="flex flex-wrap items-baseline justify-between gap-x-3 text-sm">
                    <span className="break-all font-mono font-medium text-slate-900">{event.name}</span>
                    <span className="whitespace-nowrap text-slate-500">{formatDate(event.createdAt)}</span>
                  </div>
                  <Link to={`/p/${projectId}/contacts/${event.contactId}`} className="link break-all text-sm">{event.email ?? event.contactId}</Link>
                  {Object.keys(readableEventData(event.name, event.data)).length > 0 && (
                    <DataPairs data={readableEventData(event.name, event.data)} label={`Data of ${event.name}`} />
                  )}
                </li>
              ))}
            </ul>
            <Pager
              label={`${page.total > 0 ? `${countOf(page.total, "event")} · ` : ""}page ${cursors.length + 1}`}
              hasPrevious={cursors.length > 0}
              hasNext={page.hasMore && page.cursor !== null}
              onPrevious={() => setCursors(cursors.slice(0, -1))}
              onNext={() => page.cursor && setCursors([...cursors, page.cursor])}
            />
          </>
        )}
      </QueryView>
    </Section>
  )
}
