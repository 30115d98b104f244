/**
 * Which events a destination receives: the families the service emits as checkboxes (every email event,
 * segment entries, segment exits, subscription changes, everything), and any other name or pattern typed
 * in, with the project's own names offered (its tracked events, each tracked segment's entry and exit,
 * each email event). A typed pattern is checked with the contract's own rule before it is added.
 */
import { type KeyboardEvent, useId, useState } from "react"
import { MAX_PATTERNS, patternProblem } from "../../../../src/domain/destinations.ts"
import { ENGAGEMENT_EVENTS } from "../../../../src/domain/conditions/types.ts"
import { segmentSlug } from "../../../../src/domain/events.ts"
import { useApiQuery } from "../../api/hooks.ts"
import { FieldMessage } from "../../components/Form.tsx"

/** The families of emitted events, as patterns, with what each covers. */
export const FAMILIES: ReadonlyArray<readonly [pattern: string, label: string, covers: string]> = [
  ["email.*", "Email events", "sent, delivered, opened, clicked, bounced, complained, received"],
  ["segment.*.entry", "Segment entries", "a contact entering any segment whose membership is tracked"],
  ["segment.*.exit", "Segment exits", "a contact leaving any tracked segment"],
  ["contact.*", "Subscription changes", "contact.subscribed and contact.unsubscribed"],
  ["*", "Every event", "everything above and every tracked event"]
]

const isFamily = (pattern: string) => FAMILIES.some(([family]) => family === pattern)

/** Names the project can subscribe to one by one, for the typed field's suggestions. */
function useSuggestions(): ReadonlyArray<string> {
  const names = useApiQuery(["events", "names"], (client) => client.events.names({}))
  const segments = useApiQuery(["segments", "list"], (client) => client.segments.list({}))
  const emitted = ["email.sent", "email.received", ...new Set(Object.values(ENGAGEMENT_EVENTS)), "contact.subscribed", "contact.unsubscribed"]
  const segmentNames = (segments.data ?? [])
    .filter((segment) => segment.trackMembership)
    .flatMap((segment) => [`segment.${segmentSlug(segment.name)}.entry`, `segment.${segmentSlug(segment.name)}.exit`])
  return [...new Set([...emitted, ...segmentNames, ...(names.data?.names ?? []).map((name) => name.name)])]
}

export function EventPicker({ value, onChange, error }: {
  readonly value: ReadonlyArray<string>
  readonly onChange: (events: ReadonlyArray<string>) => void
  /** The server's (or the contract's) message for `events`. */
  readonly error: string | undefined
}) {
  const ids = { typed: useId(), list: useId(), hint: useId(), problem: useId(), error: useId() }
  const [typed, setTyped] = useState("")
  const [problem, setProblem] = useState<string | undefined>(undefined)
  const suggestions = useSuggestions()
  const others = value.filter((pattern) => !isFamily(pattern))

  const toggle = (pattern: string, on: boolean) =>
    onChange(on ? [...value, pattern] : value.filter((entry) => entry !== pattern))
  const add = () => {
    const pattern = typed.trim()
    if (pattern === "") return
    const why = patternProblem(pattern) ?? (value.length >= MAX_PATTERNS ? `at most ${MAX_PATTERNS} patterns` : undefined)
    if (why !== undefined) return setProblem(`${pattern}: ${why}`)
    if (!value.includes(pattern)) onChange([...value, pattern])
    setTyped("")
    setProblem(undefined)
  }
  const onKey = (event: KeyboardEvent<HTMLInputElement>) => {
    if (event.key !== "Enter") return
    // Enter adds the pattern rather than submitting the form around it.
    event.preventDefault()
    add()
  }

  return (
    <fieldset aria-describedby={error ? ids.error : undefined}>
      <legend className="text-sm font-medium text-slate-700">Events</legend>
      <div className="mt-2 grid gap-2 sm:grid-cols-2">
        {FAMILIES.map(([pattern, label, covers]) => (
          <label key={pattern} className="flex items-start gap-2 rounded-md border border-slate-200 px-3 py-2 text-sm hover:bg-slate-50">
            <input type="checkbox" className="mt-0.5" checked={value.includes(pattern)} onChange={(event) => toggle(pattern, event.target.checked)} />
            <span>
              <span className="font-medium text-slate-800">{label}</span> <code className="font-mono text-xs text-slate-600">{pattern}</code>
              <span className="block text-xs text-slate-500">{covers}</span>
            </span>
          </label>
        ))}
      </div>
      <div className="mt-3">
        <label htmlFor={ids.typed} className="block text-sm font-medium text-slate-700">Other event or pattern</label>
        <div className="mt-1 flex gap-2">
          <input
            id={ids.typed}
            list={ids.list}
            className={`input font-mono ${problem ? "border-red-500" : ""}`}
            placeholder="segment.vip.exit"
            value={typed}
            autoComplete="off"
            spellCheck={false}
            aria-invalid={problem ? true : undefined}
            aria-describedby={[problem && ids.problem, ids.hint].filter(Boolean).join(" ")}
            onChange={(event) => {
              setTyped(event.target.value)
              setProblem(undefined)
            }}
            onKeyDown={onKey}
          />
          <button type="button" className="btn-secondary" onClick={add} disabled={typed.trim() === ""}>Add</button>
        </div>
        <datalist id={ids.list}>{suggestions.map((name) => <option key={name} value={name} />)}</datalist>
        <FieldMessage id={ids.problem} message={problem} />
        <p id={ids.hint} className="mt-1 text-xs text-slate-500">
          A tracked event's name, or a pattern: <code className="font-mono">*</code> stands for one part
          (<code className="font-mono">segment.*.entry</code>), a last <code className="font-mono">*</code> for the rest
          (<code className="font-mono">email.*</code>).
        </p>
      </div>
      {others.length > 0 && (
        <ul aria-label="Other events" className="mt-3 flex flex-wrap gap-2">
          {others.map((pattern) => (
            <li key={pattern} className="inline-flex items-center gap-1 rounded-full bg-indigo-50 py-0.5 pl-3 pr-1 text-sm text-indigo-900">
              <code className="break-all font-mono text-xs">{pattern}</code>
              <button
                type="button"
                className="rounded-full px-1.5 text-indigo-700 hover:bg-indigo-100"
                aria-label={`Remove ${pattern}`}
                onClick={() => toggle(pattern, false)}
              >
                ×
              </button>
            </li>
          ))}
        </ul>
      )}
      <FieldMessage id={ids.error} message={error} />
    </fieldset>
  )
}
