/**
 * Event destinations: the project's endpoints receiving the events the service emits (email, segment and
 * subscription events, tracked events), each with its state (one disabled after failing again and again
 * stands out) and delivery counts; a new one, whose signing secret is shown once. One destination (its
 * delivery log, test, replay, rotation) is pages/destinations/Destination.tsx.
 */
import { useState } from "react"
import { Link } from "react-router"
import { useApiMutation, useApiQuery, useProjectId } from "../api/hooks.ts"
import { Card } from "../components/Form.tsx"
import { cell, formatDate, Page, Table, wideOnly } from "../components/Page.tsx"
import { Empty, QueryView } from "../components/States.tsx"
import {
  DeliveryCounts,
  type DestinationDraft,
  DestinationForm,
  DestinationState,
  type DestinationView,
  SecretShownOnce
} from "./destinations/DestinationForm.tsx"
import { RequiresRole } from "./settings/Settings.tsx"

export function DestinationsPage() {
  const [creating, setCreating] = useState(false)
  const newButton = <button type="button" className="btn-primary" onClick={() => setCreating(true)}>New destination</button>
  return (
    <Page title="Destinations" actions={creating ? undefined : newButton}>
      <RequiresRole permission="manage">
        <p className="mb-6 max-w-3xl text-sm text-slate-600">
          Your own endpoints receiving the events this project emits, as they happen: email, segment and subscription
          events and your tracked events, each signed per Standard Webhooks, retried for a day when the endpoint fails.
        </p>
        <Destinations creating={creating} onCreating={setCreating} newButton={newButton} />
      </RequiresRole>
    </Page>
  )
}

function Destinations({ creating, onCreating, newButton }: {
  readonly creating: boolean
  readonly onCreating: (creating: boolean) => void
  readonly newButton: React.ReactNode
}) {
  const projectId = useProjectId() ?? ""
  // Counts move as deliveries are made: follow them while the page is open.
  const list = useApiQuery(["destinations", "list"], (client) => client.destinations.list({}), { refetchInterval: 10_000 })
  const [created, setCreated] = useState<{ readonly id: string; readonly url: string; readonly secret: string } | undefined>(undefined)
  return (
    <div className="space-y-6">
      {creating && <NewDestination onCancel={() => onCreating(false)} onCreated={(destination) => {
        setCreated(destination)
        onCreating(false)
      }} />}
      {created && (
        <SecretShownOnce secret={created.secret}>
          <p className="text-sm text-amber-900">
            <span className="break-all">{created.url}</span> receives its events from now on.{" "}
            <Link className="link" to={`/p/${projectId}/destinations/${created.id}`}>Open it</Link> to send a test event.
          </p>
        </SecretShownOnce>
      )}
      <QueryView
        query={list}
        isEmpty={(result) => result.data.length === 0}
        empty={creating ? null : <Empty title="No destinations yet"><p>Add an endpoint to receive events as they happen.</p><div className="mt-3">{newButton}</div></Empty>}
      >
        {(result) => <DestinationsTable destinations={result.data} projectId={projectId} />}
      </QueryView>
    </div>
  )
}

function NewDestination({ onCancel, onCreated }: {
  readonly onCancel: () => void
  readonly onCreated: (destination: { readonly id: string; readonly url: string; readonly secret: string }) => void
}) {
  const create = useApiMutation(
    (client, draft: DestinationDraft) =>
      client.destinations.create({
        payload: { url: draft.url, events: draft.events, ...(draft.description === "" ? {} : { description: draft.description }) }
      }),
    { invalidates: [["destinations"]], onSuccess: (destination) => onCreated(destination) }
  )
  return (
    <Card title="New destination">
      <DestinationForm
        initial={{ url: "", description: "", events: [] }}
        action="Create destination"
        pendingAction="Creating…"
        pending={create.isPending}
        error={create.error}
        onEdit={() => create.isError && create.reset()}
        onSubmit={(draft) => create.mutate(draft)}
      />
      <button type="button" className="link mt-3 text-sm" onClick={onCancel}>Cancel</button>
    </Card>
  )
}

function DestinationsTable({ destinations, projectId }: { readonly destinations: ReadonlyArray<DestinationView>; readonly projectId: string }) {
  return (
    <Table label="Destinations" head={["Endpoint", "Events", "State", ["Deliveries", wideOnly], ["Last success", wideOnly]]}>
      {destinations.map((destination) => {
        const autoDisabled = !destination.enabled && destination.disabledReason === "failures"
        return (
          <tr key={destination.id} className={autoDisabled ? "bg-red-50" : "hover:bg-slate-50"}>
            <td className={cell}>
              <Link to={`/p/${projectId}/destinations/${destination.id}`} className="link break-all">{destination.url}</Link>
              {destination.description && <p className="mt-0.5 break-words text-xs text-slate-600">{destination.description}</p>}
            </td>
            <td className={`${cell} font-mono text-xs`}>
              <ul aria-label="Events">{destination.events.map((pattern) => <li key={pattern} className="break-all">{pattern}</li>)}</ul>
            </td>
            <td className={cell}>
              <DestinationState destination={destination} />
              {destination.disabledAt && <p className="mt-1 whitespace-nowrap text-xs text-slate-600">since {formatDate(destination.disabledAt)}</p>}
            </td>
            <td className={`${cell} ${wideOnly} text-xs text-slate-700`}>
              <DeliveryCounts stats={destination.stats} />
            </td>
            <td className={`${cell} ${wideOnly} whitespace-nowrap text-slate-600`}>{formatDate(destination.stats.lastSuccessAt)}</td>
          </tr>
        )
      })}
    </Table>
  )
}
