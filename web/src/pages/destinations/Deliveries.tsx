/**
 * A destination's delivery log, newest first, a page at a time, filtered by status: each delivery's event,
 * status, attempts, last HTTP status and latency, opened for its webhook-id, its next attempt, its error
 * and the start of what the endpoint answered; and sent again. It follows the project's events live and
 * polls (closely while deliveries are under way).
 */
import { Fragment, useState } from "react"
import { Link, useSearchParams } from "react-router"
import { type Delivery as DeliverySchema, DeliveryStatuses } from "../../../../src/http/api/destinations.ts"
import { useApiMutation, useApiQuery, useProjectId } from "../../api/hooks.ts"
import { anyChange, useLiveRefresh } from "../../api/live.tsx"
import { MutationError } from "../../components/Form.tsx"
import { Badge, cell, Fields, formatDate, Table, wideOnly } from "../../components/Page.tsx"
import { useCursorPages } from "../../components/Pager.tsx"
import { Empty, QueryView } from "../../components/States.tsx"

export type Delivery = typeof DeliverySchema.Type
type Status = Delivery["status"]

const PAGE_SIZE = 25

const tone = (status: Status) =>
  status === "succeeded" ? "green" : status === "failed" ? "amber" : status === "parked" ? "red" : "slate"

/** What each status means, for the filter and the badges' titles. */
const MEANING: Record<Status, string> = {
  pending: "waiting for an attempt",
  succeeded: "answered 2xx",
  failed: "last attempt failed, to be retried",
  parked: "given up on"
}

const latency = (ms: number | null) => (ms === null ? "—" : ms < 10_000 ? `${ms.toLocaleString()} ms` : `${(ms / 1000).toFixed(1)} s`)


export function DeliveryLog({ destinationId, enabled }: { readonly destinationId: string; readonly enabled: boolean }) {
  const [params, setParams] = useSearchParams()
  const status = params.get("status") ?? ""
  const { cursor, pager } = useCursorPages(status)
  const query = {
    limit: String(PAGE_SIZE),
    ...(status ? { status } : {}),
    ...(cursor ? { cursor } : {})
  }
  const deliveries = useApiQuery(
    ["destinations", "deliveries", destinationId, status, cursor ?? null],
    (client) => client.destinations.deliveries({ params: { id: destinationId }, query }),
    {
      // While some are under way their status moves by itself (retries, replays): follow it closely.
      refetchInterval: (current) =>
        current.state.data?.data.some((delivery) => delivery.status === "pending" || delivery.status === "failed") ? 2_000 : 5_000
    }
  )
  // An event emitted or tracked (a delivery follows it shortly): look again soon.
  useLiveRefresh(anyChange, [["destinations"]], 1_000)
  const choose = (next: string) =>
    setParams((current) => {
      const updated = new URLSearchParams(current)
      if (next) updated.set("status", next)
      else updated.delete("status")
      return updated
    }, { replace: true })

  return (
    <>
      <div className="mb-4 flex flex-wrap items-end gap-3">
        <div>
          <label htmlFor="delivery-status" className="block text-sm font-medium text-slate-700">Status</label>
          <select id="delivery-status" className="input mt-1 w-auto" value={status} onChange={(event) => choose(event.target.value)}>
            <option value="">Any</option>
            {DeliveryStatuses.map((value) => <option key={value} value={value}>{`${value}: ${MEANING[value]}`}</option>)}
          </select>
        </div>
      </div>
      <QueryView
        query={deliveries}
        isEmpty={(page) => page.data.length === 0}
        empty={
          <Empty title={status ? `No ${status} delivery` : "No delivery yet"}>
            {status ? "Choose another status to see the others." : "Events the destination subscribes to show here as they are delivered; a test event too."}
          </Empty>
        }
      >
        {(page) => (
          <>
            <DeliveriesTable destinationId={destinationId} enabled={enabled} deliveries={page.data} />
            {pager(page)}
          </>
        )}
      </QueryView>
    </>
  )
}

function DeliveriesTable({ destinationId, enabled, deliveries }: {
  readonly destinationId: string
  readonly enabled: boolean
  readonly deliveries: ReadonlyArray<Delivery>
}) {
  const [open, setOpen] = useState<ReadonlySet<string>>(new Set())
  const toggle = (id: string) =>
    setOpen((current) => {
      const next = new Set(current)
      if (!next.delete(id)) next.add(id)
      return next
    })
  return (
    <Table label="Deliveries" head={["Event", "Status", ["Attempts", wideOnly], ["HTTP", wideOnly], ["Latency", wideOnly], "Created", ""]}>
      {deliveries.map((delivery) => {
        const expanded = open.has(delivery.id)
        const detailsId = `delivery-${delivery.id}`
        return (
          <Fragment key={delivery.id}>
            <tr className={expanded ? "bg-slate-50" : "hover:bg-slate-50"} data-testid="delivery">
              <td className={`${cell} break-all font-mono text-xs`}>{delivery.eventType}</td>
              <td className={cell}><Badge tone={tone(delivery.status)}>{delivery.status}</Badge></td>
              <td className={`${cell} ${wideOnly} tabular-nums`}>{delivery.attempts}</td>
              <td className={`${cell} ${wideOnly} tabular-nums`}>{delivery.lastStatusCode ?? "—"}</td>
              <td className={`${cell} ${wideOnly} whitespace-nowrap tabular-nums`}>{latency(delivery.latencyMs)}</td>
              <td className={`${cell} whitespace-nowrap text-slate-600`}><time dateTime={delivery.createdAt}>{formatDate(delivery.createdAt)}</time></td>
              <td className={`${cell} text-right`}>
                {/* relative: the hidden words stay inside the table's scrolling box (absolute, they would widen the page) */}
                <button
                  type="button"
                  className="link relative whitespace-nowrap text-sm"
                  aria-expanded={expanded}
                  aria-controls={detailsId}
                  onClick={() => toggle(delivery.id)}
                >
                  Details<span className="sr-only">{` of ${delivery.eventType} delivery ${delivery.id}`}</span>
                  <span aria-hidden="true">{expanded ? " ▴" : " ▾"}</span>
                </button>
              </td>
            </tr>
            {expanded && (
              <tr id={detailsId}>
                <td colSpan={7} className="bg-slate-50 px-4 pb-4">
                  <DeliveryDetails destinationId={destinationId} enabled={enabled} delivery={delivery} />
                </td>
              </tr>
            )}
          </Fragment>
        )
      })}
    </Table>
  )
}

function DeliveryDetails({ destinationId, enabled, delivery }: { readonly destinationId: string; readonly enabled: boolean; readonly delivery: Delivery }) {
  const projectId = useProjectId() ?? ""
  const [replayed, setReplayed] = useState(false)
  const replay = useApiMutation(
    (client, _: void) => client.destinations.replayDelivery({ params: { id: destinationId, deliveryId: delivery.id } }),
    { invalidates: [["destinations"]], onSuccess: () => setReplayed(true) }
  )
  return (
    <div className="space-y-3" aria-label={`Delivery ${delivery.id}`} role="region">
      <Fields
        items={[
          ["webhook-id", <code className="break-all font-mono text-xs">{delivery.id}</code>],
          ["Status", `${delivery.status}: ${MEANING[delivery.status]}`],
          ["Attempts", `${delivery.attempts.toLocaleString()}${delivery.replays > 0 ? ` (sent again ${delivery.replays.toLocaleString()} times by hand)` : ""}`],
          ["Last HTTP status", delivery.lastStatusCode === null ? "No answer" : String(delivery.lastStatusCode)],
          ["Latency", `${latency(delivery.latencyMs)}${delivery.latencyMs === null ? "" : " from the event to its delivery"}`],
          ["Next attempt", !delivery.nextAttemptAt || delivery.status === "succeeded" || delivery.status === "parked"
            ? "None planned"
            : enabled ? formatDate(delivery.nextAttemptAt) : `${formatDate(delivery.nextAttemptAt)}, once the destination is enabled again`],
          ["Contact", delivery.contactId ? <Link className="link" to={`/p/${projectId}/contacts/${delivery.contactId}`}>Open contact</Link> : "None (a test event)"],
          ["Last change", formatDate(delivery.updatedAt)]
        ]}
      />
      {delivery.error && <p className="break-words rounded-md border border-red-200 bg-red-50 px-3 py-2 text-sm text-red-900">{delivery.error}</p>}
      <DeliveryOutcome delivery={delivery} />
      <div className="flex flex-wrap items-center gap-3">
        <button type="button" className="btn-secondary" disabled={replay.isPending} onClick={() => replay.mutate()}>
          {replay.isPending ? "Sending again…" : "Send again"}
        </button>
        {replayed && <span role="status" className="text-sm text-slate-700">Queued again with the same webhook-id.</span>}
      </div>
      <MutationError error={replay.error} />
    </div>
  )
}

/** The start of what the endpoint answered, as text. */
export function DeliveryOutcome({ delivery }: { readonly delivery: Delivery }) {
  if (delivery.responseExcerpt === null || delivery.responseExcerpt === "") return null
  return (
    <div>
      <p className="text-xs font-medium uppercase tracking-wide text-slate-500">Response (start)</p>
      <pre aria-label="Response excerpt" tabIndex={0} className="mt-1 max-h-48 overflow-auto whitespace-pre-wrap break-all rounded-md border border-slate-200 bg-white p-3 font-mono text-xs text-slate-800">
        {delivery.responseExcerpt}
      </pre>
    </div>
  )
}
