/**
 * One event destination: why it is disabled (and re-enabling it), a test event and its outcome, its
 * signing secret rotated with an overlap (the new one shown once), its address and events edited, its
 * delivery log (filtered by status, a page at a time, each delivery opened for its attempts, answer and
 * error, and sent again), a time range of deliveries sent again, and deleting it.
 */
import { type FormEvent, useId, useState } from "react"
import { useNavigate, useParams } from "react-router"
import { DEFAULT_OVERLAP_SECONDS } from "../../../../src/domain/destinations.ts"
import { fieldError } from "../../api/fieldErrors.ts"
import { useApiMutation, useApiQuery, useProjectId } from "../../api/hooks.ts"
import { Confirm } from "../../components/Confirm.tsx"
import { Card, Field, MutationError, Notice } from "../../components/Form.tsx"
import { Fields, formatDate, Page, Section } from "../../components/Page.tsx"
import { ErrorState, QueryView } from "../../components/States.tsx"
import { countOf } from "../../components/words.ts"
import { type Delivery, DeliveryLog, DeliveryOutcome } from "./Deliveries.tsx"
import { DeliveryCounts, DestinationForm, DestinationState, type DestinationView, SecretShownOnce } from "./DestinationForm.tsx"
import { RequiresRole } from "../settings/Settings.tsx"

/** The destination's name in a heading: its description, else its address's host. */
const titleOf = (destination: DestinationView) => {
  if (destination.description) return destination.description
  try {
    return new URL(destination.url).host
  } catch {
    return destination.url
  }
}

export function DestinationPage() {
  const { destinationId = "" } = useParams()
  const destination = useApiQuery(["destinations", "get", destinationId], (client) => client.destinations.get({ params: { id: destinationId } }), {
    refetchInterval: 10_000
  })
  return (
    <Page title={destination.data ? titleOf(destination.data) : "Destination"}>
      <RequiresRole permission="manage">
        <QueryView query={destination}>{(data) => <DestinationDetail destination={data} />}</QueryView>
      </RequiresRole>
    </Page>
  )
}

function DestinationDetail({ destination }: { readonly destination: DestinationView }) {
  const projectId = useProjectId() ?? ""
  const id = destination.id
  const [tested, setTested] = useState<Delivery | undefined>(undefined)
  const [secret, setSecret] = useState<string | undefined>(undefined)
  const test = useApiMutation((client, _: void) => client.destinations.test({ params: { id } }), {
    invalidates: [["destinations"]],
    onSuccess: setTested
  })
  const setEnabled = useApiMutation((client, enabled: boolean) => client.destinations.update({ params: { id }, payload: { enabled } }), {
    invalidates: [["destinations"]]
  })
  return (
    <div className="space-y-8">
      <StateNotice destination={destination} busy={setEnabled.isPending} onEnable={() => setEnabled.mutate(true)} />
      <MutationError error={setEnabled.error} />
      <div className="flex flex-wrap gap-2">
        <button type="button" className="btn-primary" disabled={test.isPending} onClick={() => {
          setTested(undefined)
          test.mutate()
        }}>
          {test.isPending ? "Sending…" : "Send test event"}
        </button>
        <RotateSecret destinationId={id} onRotated={setSecret} />
        {destination.enabled && (
          <button type="button" className="btn-secondary" disabled={setEnabled.isPending} onClick={() => setEnabled.mutate(false)}>Disable</button>
        )}
      </div>
      <MutationError error={test.error} />
      {tested && <TestOutcome delivery={tested} />}
      {secret && (
        <SecretShownOnce secret={secret}>
          {destination.previousSecretExpiresAt && (
            <p className="text-sm text-amber-900">
              Until {formatDate(destination.previousSecretExpiresAt)} deliveries are signed with the previous secret too.
            </p>
          )}
        </SecretShownOnce>
      )}
      <Section title="Overview">
        <Fields
          items={[
            ["Endpoint", <span className="break-all font-mono text-sm">{destination.url}</span>],
            ["Events", <span className="break-all font-mono text-sm">{destination.events.join(", ")}</span>],
            ["State", <DestinationState destination={destination} />],
            ["Deliveries", <DeliveryCounts stats={destination.stats} />],
            ["Last success", formatDate(destination.stats.lastSuccessAt)],
            ["Last failure", formatDate(destination.stats.lastFailureAt)],
            ["Secret", destination.previousSecretExpiresAt && Date.parse(destination.previousSecretExpiresAt) > Date.now()
              ? `Rotated ${formatDate(destination.secretRotatedAt)}; the previous one also signs until ${formatDate(destination.previousSecretExpiresAt)}`
              : destination.secretRotatedAt ? `Rotated ${formatDate(destination.secretRotatedAt)}` : "Made with the destination"],
            ["Created", formatDate(destination.createdAt)]
          ]}
        />
      </Section>
      <Section title="Delivery log">
        <DeliveryLog destinationId={id} enabled={destination.enabled} />
      </Section>
      <ReplayRange destinationId={id} />
      <Edit destination={destination} />
      <Delete destination={destination} listPath={`/p/${projectId}/destinations`} />
    </div>
  )
}

/** Why it is disabled, when it is, and the way back. */
function StateNotice({ destination, busy, onEnable }: { readonly destination: DestinationView; readonly busy: boolean; readonly onEnable: () => void }) {
  if (destination.enabled) return null
  const automatic = destination.disabledReason === "failures"
  return (
    <div
      role={automatic ? "alert" : "status"}
      className={`rounded-lg border px-5 py-4 ${automatic ? "border-red-200 bg-red-50 text-red-900" : "border-slate-200 bg-white text-slate-800"}`}
    >
      <p className="font-medium">
        {automatic
          ? `Disabled automatically on ${formatDate(destination.disabledAt)} after ${countOf(destination.consecutiveFailures, "failed attempt")} in a row.`
          : `Disabled on ${formatDate(destination.disabledAt)}.`}
      </p>
      <p className="mt-1 text-sm">
        {automatic ? "Fix the endpoint (a test event shows what it answers), then re-enable it. " : ""}
        While disabled, it receives nothing and new events are not kept for it.
      </p>
      <button type="button" className="btn-primary mt-3" disabled={busy} onClick={onEnable}>{automatic ? "Re-enable" : "Enable"}</button>
    </div>
  )
}

/** What the endpoint answered the test event. */
function TestOutcome({ delivery }: { readonly delivery: Delivery }) {
  const ok = delivery.status === "succeeded"
  return (
    <section
      aria-label="Test event"
      className={`rounded-lg border px-5 py-4 ${ok ? "border-green-200 bg-green-50 text-green-900" : "border-red-200 bg-red-50 text-red-900"}`}
    >
      <p role="status" className="font-medium" data-testid="test-outcome">
        {ok ? "The test event was delivered" : "The test event was not delivered"}
        {delivery.lastStatusCode !== null ? `: ${delivery.lastStatusCode}` : ""}
        {delivery.latencyMs !== null ? ` in ${delivery.latencyMs.toLocaleString()} ms` : ""}
      </p>
      {delivery.error && <p className="mt-1 break-words text-sm">{delivery.error}</p>}
      <DeliveryOutcome delivery={delivery} />
    </section>
  )
}

const OVERLAPS: ReadonlyArray<readonly [seconds: number, label: string]> = [
  [0, "None: the previous secret stops now"],
  [3_600, "1 hour"],
  [DEFAULT_OVERLAP_SECONDS, "24 hours"],
  [7 * 86_400, "7 days"]
]

function RotateSecret({ destinationId, onRotated }: { readonly destinationId: string; readonly onRotated: (secret: string) => void }) {
  const overlapId = useId()
  const [open, setOpen] = useState(false)
  const [overlap, setOverlap] = useState(DEFAULT_OVERLAP_SECONDS)
  const rotate = useApiMutation(
    (client, overlapSeconds: number) => client.destinations.rotateSecret({ params: { id: destinationId }, payload: { overlapSeconds } }),
    {
      invalidates: [["destinations"]],
      onSuccess: (rotated) => {
        setOpen(false)
        onRotated(rotated.secret)
      }
    }
  )
  return (
    <>
      <button type="button" className="btn-secondary" onClick={() => {
        rotate.reset()
        setOpen(true)
      }}>Rotate secret</button>
      <Confirm
        open={open}
        title="Rotate the signing secret?"
        action="Rotate secret"
        busy={rotate.isPending}
        onConfirm={() => rotate.mutate(overlap)}
        onCancel={() => setOpen(false)}
      >
        <p>A new secret signs every delivery from now on; it is shown once.</p>
        <label htmlFor={overlapId} className="mt-4 block font-medium text-slate-700">Keep signing with the previous secret too for</label>
        <select id={overlapId} className="input mt-1" value={overlap} onChange={(event) => setOverlap(Number(event.target.value))}>
          {OVERLAPS.map(([seconds, label]) => <option key={seconds} value={seconds}>{label}</option>)}
        </select>
        <p className="mt-1 text-xs text-slate-500">Meanwhile each delivery carries both signatures, so your endpoint can switch over at its own pace.</p>
        {rotate.error && <div className="mt-3"><ErrorState failure={rotate.error} /></div>}
      </Confirm>
    </>
  )
}

/** A datetime-local value (the browser's local time): the full hour `hours` from now (negative: ago), or the next. */
const localHour = (hours: number) => {
  const at = new Date(Date.now() + hours * 3_600_000)
  at.setMinutes(0, 0, 0)
  if (hours >= 0) at.setHours(at.getHours() + 1)
  return new Date(at.getTime() - at.getTimezoneOffset() * 60_000).toISOString().slice(0, 16)
}

/** A datetime-local value as the instant the API reads (the value itself when it is not one, for the contract to name). */
const toInstant = (local: string) => {
  const at = new Date(local)
  return Number.isNaN(at.getTime()) ? local : at.toISOString()
}

function ReplayRange({ destinationId }: { readonly destinationId: string }) {
  // The last day, to the next full hour (events emitted while the page is open are in it).
  const [from, setFrom] = useState(() => localHour(-24))
  const [to, setTo] = useState(() => localHour(0))
  const [replayed, setReplayed] = useState<number | undefined>(undefined)
  const replay = useApiMutation(
    (client, range: { readonly from: string; readonly to: string }) => client.destinations.replayRange({ params: { id: destinationId }, payload: range }),
    { invalidates: [["destinations"]], onSuccess: (result) => setReplayed(result.replayed) }
  )
  const submit = (event: FormEvent) => {
    event.preventDefault()
    setReplayed(undefined)
    replay.mutate({ from: toInstant(from), to: toInstant(to) })
  }
  const edit = (set: (value: string) => void) => (event: React.ChangeEvent<HTMLInputElement>) => {
    if (replay.isError) replay.reset()
    set(event.target.value)
  }
  return (
    <Card title="Replay a time range">
      <p className="mb-4 text-sm text-slate-600">
        Sends again every delivery of the events emitted in this range (at most 31 days), in order, each with its own webhook-id:
        for an endpoint that lost what it received.
      </p>
      <form onSubmit={submit} aria-label="Replay a time range" className="grid gap-3 sm:grid-cols-[1fr_1fr_auto] sm:items-start">
        <Field label="From" type="datetime-local" required value={from} error={fieldError(replay.error, "from")} onChange={edit(setFrom)} />
        <Field label="To" type="datetime-local" required value={to} error={fieldError(replay.error, "to")} onChange={edit(setTo)} />
        <button type="submit" className="btn-secondary sm:mt-6" disabled={replay.isPending}>{replay.isPending ? "Replaying…" : "Replay range"}</button>
      </form>
      <MutationError error={replay.error} fields={["from", "to"]} />
      {replayed !== undefined && (
        <div className="mt-4">
          <Notice>{replayed === 0 ? "No delivery in that range." : `${countOf(replayed, "delivery", "deliveries")} sent again: follow them in the log.`}</Notice>
        </div>
      )}
    </Card>
  )
}

function Edit({ destination }: { readonly destination: DestinationView }) {
  const [saved, setSaved] = useState(false)
  const update = useApiMutation(
    (client, draft: { readonly url: string; readonly description: string; readonly events: ReadonlyArray<string> }) =>
      client.destinations.update({
        params: { id: destination.id },
        payload: { url: draft.url, events: draft.events, description: draft.description === "" ? null : draft.description }
      }),
    { invalidates: [["destinations"]], onSuccess: () => setSaved(true) }
  )
  const initial = { url: destination.url, description: destination.description ?? "", events: destination.events }
  return (
    <Card title="Endpoint and events">
      {saved && <div className="mb-4"><Notice>Saved: new events follow the new settings.</Notice></div>}
      <DestinationForm
        // A save (or another tab's) changes these: the form starts from them anew (deliveries, which move
        // updatedAt, leave an edit in progress alone).
        key={[initial.url, initial.description, ...initial.events].join("\n")}
        initial={initial}
        action="Save changes"
        pendingAction="Saving…"
        pending={update.isPending}
        error={update.error}
        onEdit={() => {
          setSaved(false)
          if (update.isError) update.reset()
        }}
        onSubmit={(draft) => update.mutate(draft)}
        guard="destination"
      />
    </Card>
  )
}

function Delete({ destination, listPath }: { readonly destination: DestinationView; readonly listPath: string }) {
  const navigate = useNavigate()
  const [open, setOpen] = useState(false)
  const remove = useApiMutation((client, _: void) => client.destinations.delete({ params: { id: destination.id } }), {
    // Not this page's own query: it would ask for the deleted destination (404) before the page is left.
    invalidates: [["destinations", "list"]],
    onSuccess: () => void navigate(listPath, { replace: true })
  })
  return (
    <Card title="Delete" tone="danger">
      <p className="text-sm text-slate-700">Deleting the destination drops its delivery log and every delivery not made yet.</p>
      <button type="button" className="btn-danger mt-4" onClick={() => setOpen(true)}>Delete destination</button>
      <Confirm
        open={open}
        title="Delete this destination?"
        action="Delete destination"
        danger
        busy={remove.isPending}
        onConfirm={() => remove.mutate()}
        onCancel={() => setOpen(false)}
      >
        <p className="break-all"><span className="font-mono">{destination.url}</span> stops receiving events now; its delivery log is deleted.</p>
        {remove.error && <div className="mt-3"><ErrorState failure={remove.error} /></div>}
      </Confirm>
    </Card>
  )
}
