/**
 * The config form of each step type, with inputs of the right kind: a delay's amount and unit, the
 * template to send, a webhook's URL and method, the event to wait for and its timeout, a condition (the
 * shared condition builder; a stored one-filter config { field, operator, value } opens as a tree), an
 * exit's reason. The draft config is the parent's state; `errors` are the API's 422 field errors.
 */
import { useId } from "react"
import type { FieldError } from "../../api/failure.ts"
import { useApiQuery } from "../../api/hooks.ts"
import { asCondition, ConditionBuilder } from "../../components/conditions/ConditionBuilder.tsx"
import type { StepType } from "./model.ts"

export type Config = Record<string, unknown>

export const DEFAULT_CONFIG: Record<StepType, Config> = {
  TRIGGER: {},
  SEND_EMAIL: { templateId: "", recipient: { type: "CONTACT" } },
  DELAY: { amount: 1, unit: "days" },
  WAIT_FOR_EVENT: { eventName: "" },
  CONDITION: { condition: { logic: "AND", groups: [{ filters: [{ field: "data.", operator: "equals", value: "" }] }] } },
  WEBHOOK: { url: "", method: "POST" },
  UPDATE_CONTACT: { updates: {}, subscriptionAction: "none" },
  EXIT: {}
}

const TIMEOUT_UNITS = [["seconds", 1], ["minutes", 60], ["hours", 3_600], ["days", 86_400]] as const

/** The largest unit that divides the timeout evenly, for showing a stored one. */
const timeoutParts = (seconds: number): [number, number] => {
  const [, size] = [...TIMEOUT_UNITS].reverse().find(([, size]) => seconds % size === 0) ?? TIMEOUT_UNITS[0]
  return [seconds / size, size]
}

function Labelled({ label, hint, children }: { readonly label: string; readonly hint?: string; readonly children: (id: string) => React.ReactNode }) {
  const id = useId()
  return (
    <div>
      <label htmlFor={id} className="block text-sm font-medium text-slate-700">{label}</label>
      <div className="mt-1">{children(id)}</div>
      {hint && <p className="mt-1 text-xs text-slate-500">{hint}</p>}
    </div>
  )
}

const numberOrText = (value: string): number | string => (value.trim() !== "" && Number.isFinite(Number(value)) ? Number(value) : value)

/** A CONDITION config's tree: its `condition`, or its one flat filter as a one-filter tree. */
const conditionTree = (config: Config) =>
  asCondition(config.condition ?? (config.field === undefined ? undefined : {
    logic: "AND",
    groups: [{ filters: [Object.fromEntries(["field", "operator", "value", "unit"].filter((key) => config[key] !== undefined).map((key) => [key, config[key]]))] }]
  }))

export function StepConfigFields({ type, config, onChange, errors = [] }: {
  readonly type: StepType
  readonly config: Config
  readonly onChange: (config: Config) => void
  readonly errors?: ReadonlyArray<FieldError>
}) {
  const set = (patch: Config) => onChange({ ...config, ...patch })
  switch (type) {
    case "TRIGGER":
      return <p className="text-sm text-slate-600">The trigger's event is the workflow's: change it under Trigger above.</p>
    case "SEND_EMAIL":
      return <SendEmailFields config={config} set={set} />
    case "DELAY":
      return (
        <div className="grid grid-cols-2 gap-3">
          <Labelled label="Wait for" hint="Fractions allowed (0.5 hours)">
            {(id) => (
              <input id={id} type="number" min="0" step="any" required className="input" value={String(config.amount ?? "")}
                onChange={(event) => set({ amount: numberOrText(event.target.value) })} />
            )}
          </Labelled>
          <Labelled label="Unit">
            {(id) => (
              <select id={id} className="input" value={String(config.unit ?? "days")} onChange={(event) => set({ unit: event.target.value })}>
                <option value="minutes">minutes</option>
                <option value="hours">hours</option>
                <option value="days">days</option>
              </select>
            )}
          </Labelled>
        </div>
      )
    case "WAIT_FOR_EVENT":
      return <WaitFields config={config} set={set} onChange={onChange} />
    case "CONDITION":
      return (
        <div>
          <ConditionBuilder value={conditionTree(config)} onChange={(condition) => onChange({ condition })} path="config.condition" errors={errors} />
          <p className="mt-1 text-xs text-slate-500">The yes branch is taken when the contact matches.</p>
        </div>
      )
    case "WEBHOOK":
      return (
        <div className="space-y-3">
          <Labelled label="URL" hint="http(s); Liquid such as {{ contact.email }} allowed">
            {(id) => <input id={id} type="url" required className="input font-mono" placeholder="https://example.com/hook" value={String(config.url ?? "")} onChange={(event) => set({ url: event.target.value })} />}
          </Labelled>
          <Labelled label="Method">
            {(id) => (
              <select id={id} className="input" value={String(config.method ?? "POST")} onChange={(event) => set({ method: event.target.value })}>
                {["POST", "PUT", "PATCH", "GET", "DELETE"].map((method) => <option key={method}>{method}</option>)}
              </select>
            )}
          </Labelled>
          <Labelled label="Body (optional)" hint="Sent as is; Liquid allowed. Empty: the default JSON body.">
            {(id) => (
              <textarea id={id} rows={3} className="input font-mono" value={typeof config.body === "string" ? config.body : config.body === undefined ? "" : JSON.stringify(config.body)}
                onChange={(event) => {
                  const { body: _body, ...rest } = config
                  onChange(event.target.value === "" ? rest : { ...rest, body: event.target.value })
                }} />
            )}
          </Labelled>
        </div>
      )
    case "UPDATE_CONTACT":
      return <UpdateContactFields config={config} set={set} />
    case "EXIT":
      return (
        <Labelled label="Reason (optional)">
          {(id) => <input id={id} className="input" value={String(config.reason ?? "")} onChange={(event) => set({ reason: event.target.value })} />}
        </Labelled>
      )
  }
}

function SendEmailFields({ config, set }: { readonly config: Config; readonly set: (patch: Config) => void }) {
  const templates = useApiQuery(["templates", "all"], (client) => client.templates.list({ query: { pageSize: "100", sort: "name", dir: "asc" } }))
  const recipient = (config.recipient ?? { type: "CONTACT" }) as { type: string; customEmail?: string }
  return (
    <div className="space-y-3">
      <Labelled label="Template" hint={templates.isError ? `Templates could not be loaded: ${templates.error.message}` : undefined}>
        {(id) => (
          <select id={id} required className="input" value={String(config.templateId ?? "")} onChange={(event) => set({ templateId: event.target.value })}>
            <option value="">{templates.isPending ? "Loading templates…" : "Choose a template"}</option>
            {templates.data?.data.map((template) => <option key={template.id} value={template.id}>{template.name}</option>)}
          </select>
        )}
      </Labelled>
      <Labelled label="Send to">
        {(id) => (
          <select id={id} className="input" value={recipient.type} onChange={(event) => set({ recipient: event.target.value === "CUSTOM" ? { type: "CUSTOM", customEmail: "" } : { type: "CONTACT" } })}>
            <option value="CONTACT">The contact</option>
            <option value="CUSTOM">Another address</option>
          </select>
        )}
      </Labelled>
      {recipient.type === "CUSTOM" && (
        <Labelled label="Address">
          {(id) => <input id={id} type="email" required className="input" value={recipient.customEmail ?? ""} onChange={(event) => set({ recipient: { type: "CUSTOM", customEmail: event.target.value } })} />}
        </Labelled>
      )}
    </div>
  )
}

/** Event names the project has seen, offered as suggestions (any name may be typed). */
export function EventNameSuggestions({ id }: { readonly id: string }) {
  const names = useApiQuery(["events", "names"], (client) => client.events.names({}))
  return <datalist id={id}>{names.data?.names.map((name) => <option key={name.name} value={name.name} />)}</datalist>
}

function WaitFields({ config, set, onChange }: { readonly config: Config; readonly set: (patch: Config) => void; readonly onChange: (config: Config) => void }) {
  const listId = useId()
  const timeout = typeof config.timeout === "number" ? config.timeout : undefined
  const [amount, size] = timeout === undefined ? [undefined, 3_600] : timeoutParts(timeout)
  const setTimeout = (nextAmount: string, nextSize: number) => {
    const { timeout: _timeout, ...rest } = config
    onChange(nextAmount === "" ? rest : { ...rest, timeout: Number(nextAmount) * nextSize })
  }
  return (
    <div className="space-y-3">
      <Labelled label="Event name">
        {(id) => (
          <>
            <input id={id} required list={listId} className="input font-mono" value={String(config.eventName ?? "")} onChange={(event) => set({ eventName: event.target.value })} />
            <EventNameSuggestions id={listId} />
          </>
        )}
      </Labelled>
      <div className="grid grid-cols-2 gap-3">
        <Labelled label="Timeout (optional)" hint="Empty: wait forever">
          {(id) => <input id={id} type="number" min="0" step="any" className="input" value={amount === undefined ? "" : String(amount)} onChange={(event) => setTimeout(event.target.value, size)} />}
        </Labelled>
        <Labelled label="Timeout unit">
          {(id) => (
            <select id={id} className="input" value={String(size)} onChange={(event) => amount !== undefined && setTimeout(String(amount), Number(event.target.value))}>
              {TIMEOUT_UNITS.map(([label, value]) => <option key={label} value={value}>{label}</option>)}
            </select>
          )}
        </Labelled>
      </div>
    </div>
  )
}

function UpdateContactFields({ config, set }: { readonly config: Config; readonly set: (patch: Config) => void }) {
  const updates = Object.entries((config.updates ?? config.data ?? {}) as Record<string, unknown>)
  const write = (entries: ReadonlyArray<readonly [string, unknown]>) => set({ updates: Object.fromEntries(entries) })
  return (
    <div className="space-y-3">
      <fieldset>
        <legend className="text-sm font-medium text-slate-700">Custom fields to set</legend>
        <ul className="mt-1 space-y-2">
          {updates.map(([key, value], index) => (
            <li key={index} className="flex flex-wrap items-center gap-2">
              <input aria-label={`Field ${index + 1} name`} className="input min-w-0 flex-1 font-mono" value={key}
                onChange={(event) => write(updates.map((entry, at) => (at === index ? [event.target.value, entry[1]] : entry)))} />
              <input aria-label={`Field ${index + 1} value`} className="input min-w-0 flex-1" value={typeof value === "string" ? value : JSON.stringify(value)}
                onChange={(event) => write(updates.map((entry, at) => (at === index ? [entry[0], numberOrText(event.target.value)] : entry)))} />
              <button type="button" className="btn-secondary" onClick={() => write(updates.filter((_, at) => at !== index))}>Remove</button>
            </li>
          ))}
        </ul>
        <button type="button" className="btn-secondary mt-2" onClick={() => write([...updates, [`field${updates.length + 1}`, ""]])}>Add field</button>
        <p className="mt-1 text-xs text-slate-500">Numbers are stored as numbers; Liquid such as {"{{ event.plan }}"} allowed.</p>
      </fieldset>
      <Labelled label="Subscription">
        {(id) => (
          <select id={id} className="input" value={String(config.subscriptionAction ?? "none")} onChange={(event) => set({ subscriptionAction: event.target.value })}>
            <option value="none">Leave as is</option>
            <option value="subscribe">Subscribe</option>
            <option value="unsubscribe">Unsubscribe</option>
          </select>
        )}
      </Labelled>
    </div>
  )
}
