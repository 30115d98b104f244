/**
 * What the destination pages share: the form of a destination's address, description and events (new
 * and edited alike, each field's error at it), its state as a badge, and the signing secret shown once.
 */
import { type FormEvent, useState } from "react"
import type { Destination } from "../../../../src/http/api/destinations.ts"
import type { ApiFailure } from "../../api/failure.ts"
import { fieldError } from "../../api/fieldErrors.ts"
import { CopyButton } from "../../components/CopyButton.tsx"
import { Field, MutationError } from "../../components/Form.tsx"
import { Badge } from "../../components/Page.tsx"
import { UnsavedChanges } from "../../components/UnsavedChanges.tsx"
import { countOf } from "../../components/words.ts"
import { EventPicker } from "./EventPicker.tsx"

export type DestinationView = typeof Destination.Type

export interface DestinationDraft {
  readonly url: string
  readonly description: string
  readonly events: ReadonlyArray<string>
}

const FIELDS = ["url", "description", "events"]

const sameDraft = (a: DestinationDraft, b: DestinationDraft) =>
  a.url === b.url && a.description === b.description && a.events.join("\n") === b.events.join("\n")

/**
 * The fields of a destination. `guard` names what leaving with unsaved edits would lose (the edit page);
 * the parent remounts the form (a `key`) to start it over after a save.
 */
export function DestinationForm({ initial, action, pendingAction, pending, error, onSubmit, onEdit, guard }: {
  readonly initial: DestinationDraft
  readonly action: string
  readonly pendingAction: string
  readonly pending: boolean
  readonly error: ApiFailure | null
  readonly onSubmit: (draft: DestinationDraft) => void
  /** Called on each edit (to clear the last failure: it no longer describes the values). */
  readonly onEdit?: () => void
  readonly guard?: string
}) {
  const [draft, setDraft] = useState(initial)
  const edit = (patch: Partial<DestinationDraft>) => {
    onEdit?.()
    setDraft((current) => ({ ...current, ...patch }))
  }
  const submit = (event: FormEvent) => {
    event.preventDefault()
    onSubmit({ url: draft.url.trim(), description: draft.description.trim(), events: draft.events })
  }
  const dirty = !sameDraft(draft, initial)
  return (
    <form onSubmit={submit} aria-label={action} className="space-y-4">
      <Field
        label="Endpoint URL"
        inputMode="url"
        required
        placeholder="https://example.com/webhooks/mailstream"
        autoComplete="off"
        spellCheck={false}
        value={draft.url}
        error={fieldError(error, "url")}
        hint="Each event is POSTed here as JSON, signed per Standard Webhooks (webhook-id, webhook-timestamp, webhook-signature)."
        onChange={(event) => edit({ url: event.target.value })}
      />
      <Field
        label="Description (optional)"
        maxLength={500}
        value={draft.description}
        error={fieldError(error, "description")}
        onChange={(event) => edit({ description: event.target.value })}
      />
      <EventPicker value={draft.events} onChange={(events) => edit({ events })} error={fieldError(error, "events")} />
      <div className="flex items-center gap-3">
        <button type="submit" className="btn-primary" disabled={pending || draft.events.length === 0 || (guard !== undefined && !dirty)}>
          {pending ? pendingAction : action}
        </button>
        {draft.events.length === 0 && <span className="text-sm text-slate-500">Choose at least one event.</span>}
      </div>
      <MutationError error={error} fields={FIELDS} />
      {guard !== undefined && <UnsavedChanges dirty={dirty} what={guard} />}
    </form>
  )
}

/** Enabled; disabled by hand; or disabled after failing again and again (what the owner must notice). */
export function DestinationState({ destination }: { readonly destination: DestinationView }) {
  if (destination.enabled) {
    return destination.consecutiveFailures > 0
      ? <Badge tone="amber">{`failing (${countOf(destination.consecutiveFailures, "failure")} in a row)`}</Badge>
      : <Badge tone="green">enabled</Badge>
  }
  return destination.disabledReason === "failures" ? <Badge tone="red">disabled after failures</Badge> : <Badge>disabled</Badge>
}

/** The signing secret, shown once (when the destination is made and when it is rotated). */
export function SecretShownOnce({ secret, children }: { readonly secret: string; readonly children?: React.ReactNode }) {
  return (
    <div role="status" className="space-y-3 rounded-lg border border-amber-200 bg-amber-50 p-4">
      <p className="text-sm font-medium text-amber-900">Copy the signing secret now: it is not shown again.</p>
      <div className="flex items-center gap-2">
        <code className="min-w-0 flex-1 truncate rounded bg-white px-2 py-1.5 font-mono text-sm text-slate-900" data-testid="signing-secret">{secret}</code>
        <CopyButton value={secret} label="signing secret" />
      </div>
      {children}
    </div>
  )
}

/** "12 succeeded · 1 retrying · 3 pending", leaving out the statuses with none (but always the successes). */
export function DeliveryCounts({ stats }: { readonly stats: DestinationView["stats"] }) {
  const parts = [
    `${stats.succeeded.toLocaleString()} succeeded`,
    ...(stats.failed > 0 ? [`${stats.failed.toLocaleString()} retrying`] : []),
    ...(stats.pending > 0 ? [`${stats.pending.toLocaleString()} pending`] : []),
    ...(stats.parked > 0 ? [`${stats.parked.toLocaleString()} parked`] : [])
  ]
  return <span className="whitespace-nowrap">{parts.join(" · ")}</span>
}
