/**
 * The workflow editor: the graph beside a form panel that does everything the graph does by keyboard:
 * add a step of any type (optionally after a step's outlet, inserted before whatever that outlet led to),
 * pick a step to edit its name and config, point each of its outlets at another step, delete it (the API
 * splices: the steps before it are reconnected to its successor).
 */
import { Effect } from "effect"
import { type FormEvent, useCallback, useId, useMemo, useState } from "react"
import type { ApiClient } from "../../api/client.ts"
import type { ApiFailure } from "../../api/failure.ts"
import { useApiMutation, useApiQuery } from "../../api/hooks.ts"
import { Confirm } from "../../components/Confirm.tsx"
import { MutationError } from "../../components/Form.tsx"
import { WorkflowGraph } from "./Graph.tsx"
import { ADDABLE_TYPES, type Outlet, outletOf, outletsOf, type Step, type StepType, summary, type Transition, TYPE_LABELS, type WorkflowData } from "./model.ts"
import { type Config, DEFAULT_CONFIG, StepConfigFields } from "./StepConfig.tsx"

const transitionPayload = (fromStepId: string, outlet: Outlet, toStepId: string) => ({
  fromStepId,
  toStepId,
  ...(outlet.branch ? { branch: outlet.branch } : {}),
  ...(outlet.waitOutcome ? { waitOutcome: outlet.waitOutcome } : {})
})

/** Points `outlet` of a step at `toStepId` (null: at nothing), replacing the transition it had. */
const relink = (client: ApiClient, workflowId: string, current: Transition | undefined, fromStepId: string, outlet: Outlet, toStepId: string | null) =>
  Effect.gen(function*() {
    if (current) yield* client.workflows.deleteTransition({ params: { id: workflowId, transitionId: current.id } })
    if (toStepId) yield* client.workflows.addTransition({ params: { id: workflowId }, payload: transitionPayload(fromStepId, outlet, toStepId) })
  })

/**
 * A failed save: the API's message and request id, and its field errors (a condition's show at their
 * filter in the builder instead).
 */
function SaveError({ error }: { readonly error: ApiFailure | null }) {
  if (error === null) return null
  const problems = error.fieldErrors.filter((problem) => !problem.field.startsWith("config.condition"))
  return (
    <>
      <MutationError error={error} />
      {problems.length > 0 && (
        <ul className="mt-2 space-y-0.5 text-sm text-red-700" data-testid="field-errors">
          {problems.map((problem) => <li key={problem.field + problem.message}><code className="font-mono text-xs">{problem.field}</code>: {problem.message}</li>)}
        </ul>
      )}
    </>
  )
}

/** "stepId:outletId" of an outlet, the value of the "after" choices. */
const slot = (stepId: string, outletId: string) => `${stepId}:${outletId}`

export function WorkflowEditor({ workflow, currentStepIds }: { readonly workflow: WorkflowData; readonly currentStepIds: ReadonlySet<string> }) {
  const id = workflow.id
  const invalidates = [["workflows"]]
  const [selectedId, setSelectedId] = useState<string | null>(null)
  const [doomed, setDoomed] = useState<Step | null>(null)
  const templates = useApiQuery(["templates", "all"], (client) => client.templates.list({ query: { pageSize: "100", sort: "name", dir: "asc" } }))
  const templateNames = useMemo(() => new Map(templates.data?.data.map((template) => [template.id, template.name]) ?? []), [templates.data])
  const summaryOf = useCallback((step: Step) => summary(step, templateNames, workflow.triggerConfig.eventName), [templateNames, workflow.triggerConfig.eventName])
  const selected = workflow.steps.find((step) => step.id === selectedId)

  const connect = useApiMutation(
    (client, { from, outlet, to }: { from: string; outlet: Outlet; to: string | null }) =>
      relink(client, id, workflow.transitions.find((transition) => transition.fromStepId === from && outletOf(transition) === outlet.id), from, outlet, to),
    { invalidates }
  )
  const move = useApiMutation(
    (client, { stepId, position }: { stepId: string; position: { x: number; y: number } }) =>
      client.workflows.updateStep({ params: { id, stepId }, payload: { position } }),
    { invalidates }
  )
  const removeStep = useApiMutation(
    (client, step: Step) => client.workflows.deleteStep({ params: { id, stepId: step.id }, query: { splice: "true" } }),
    {
      invalidates,
      onSuccess: () => {
        setDoomed(null)
        setSelectedId(null)
      }
    }
  )
  const removeTransition = useApiMutation(
    (client, transitionId: string) => client.workflows.deleteTransition({ params: { id, transitionId } }),
    { invalidates }
  )
  const failure = connect.error ?? move.error ?? removeTransition.error

  return (
    <div className="grid grid-cols-1 gap-4 lg:grid-cols-[minmax(0,1fr)_22rem]">
      <div className="min-w-0">
        <WorkflowGraph
          workflow={workflow}
          summaryOf={summaryOf}
          selectedId={selectedId}
          currentStepIds={currentStepIds}
          onSelect={setSelectedId}
          onConnect={(from, outlet, to) => connect.mutate({ from, outlet, to })}
          onMove={(stepId, position) => move.mutate({ stepId, position })}
          onDeleteStep={setDoomed}
          onDeleteTransition={(transitionId) => removeTransition.mutate(transitionId)}
        />
        <p className="mt-2 text-xs text-slate-500">
          Drag from a step's bottom handle to another step to connect them; select a step or an arrow and press Delete to remove it.
          The panel does the same by keyboard.
        </p>
        <MutationError error={failure} />
      </div>
      <div className="min-w-0 space-y-4">
        <div>
          <label htmlFor="step-picker" className="block text-sm font-medium text-slate-700">Step</label>
          <select id="step-picker" className="input mt-1" value={selectedId ?? ""} onChange={(event) => setSelectedId(event.target.value || null)}>
            <option value="">Add a new step</option>
            {workflow.steps.map((step) => <option key={step.id} value={step.id}>{TYPE_LABELS[step.type]}: {step.name}</option>)}
          </select>
        </div>
        {selected
          ? (
            <StepPanel
              key={`${selected.id}:${JSON.stringify(selected.config)}:${selected.name}`}
              workflow={workflow}
              step={selected}
              onConnect={(outlet, to) => connect.mutate({ from: selected.id, outlet, to })}
              connecting={connect.isPending}
              onDelete={() => setDoomed(selected)}
            />
          )
          : <AddStepPanel workflow={workflow} />}
      </div>
      <Confirm
        open={doomed !== null}
        title={`Delete the step ${doomed?.name ?? ""}?`}
        action="Delete step"
        danger
        busy={removeStep.isPending}
        onCancel={() => {
          setDoomed(null)
          removeStep.reset()
        }}
        onConfirm={() => doomed && removeStep.mutate(doomed)}
      >
        <p>The steps leading to it are reconnected to the step after it. Executions waiting on it move on.</p>
        <MutationError error={removeStep.error} />
      </Confirm>
    </div>
  )
}

/** Adds a step, optionally after an outlet (inserted before what that outlet led to). */
function AddStepPanel({ workflow }: { readonly workflow: WorkflowData }) {
  const ids = { type: useId(), name: useId(), after: useId() }
  const [type, setType] = useState<StepType>("SEND_EMAIL")
  const [name, setName] = useState("")
  const [config, setConfig] = useState<Config>(DEFAULT_CONFIG.SEND_EMAIL)
  const [added, setAdded] = useState<Step | null>(null)
  const outlets = workflow.steps.flatMap((step) => outletsOf(step.type).map((outlet) => ({ step, outlet })))
  const taken = (stepId: string, outletId: string) =>
    workflow.transitions.find((transition) => transition.fromStepId === stepId && outletOf(transition) === outletId)
  // By default after the first free outlet, in the order the steps were added.
  const firstFree = outlets.find(({ step, outlet }) => taken(step.id, outlet.id) === undefined)
  const [chosenAfter, setAfter] = useState(firstFree ? slot(firstFree.step.id, firstFree.outlet.id) : "")
  // A step that is gone (or not yet in the data) is no choice.
  const after = outlets.some(({ step, outlet }) => slot(step.id, outlet.id) === chosenAfter) ? chosenAfter : ""

  const add = useApiMutation(
    (client, input: { type: StepType; name: string; config: Config; after: string }) =>
      Effect.gen(function*() {
        const step = yield* client.workflows.addStep({
          params: { id: workflow.id },
          payload: { type: input.type, config: input.config, ...(input.name.trim() ? { name: input.name.trim() } : {}) }
        })
        const chosen = outlets.find(({ step: from, outlet }) => slot(from.id, outlet.id) === input.after)
        if (chosen) {
          const previous = taken(chosen.step.id, chosen.outlet.id)
          yield* relink(client, workflow.id, previous, chosen.step.id, chosen.outlet, step.id)
          // Inserted: the new step's first outlet goes where the old transition went.
          const onward = outletsOf(step.type)[0]
          if (previous && onward) {
            yield* client.workflows.addTransition({ params: { id: workflow.id }, payload: transitionPayload(step.id, onward, previous.toStepId) })
          }
        }
        return step
      }),
    {
      invalidates: [["workflows"]],
      onSuccess: (step) => {
        // Ready for the next one, after this one.
        setName("")
        setConfig(DEFAULT_CONFIG[type])
        const onward = outletsOf(step.type)[0]
        setAfter(onward ? slot(step.id, onward.id) : "")
        setAdded(step)
      }
    }
  )
  const submit = (event: FormEvent) => {
    event.preventDefault()
    add.mutate({ type, name, config, after })
  }
  return (
    <form onSubmit={submit} aria-label="Add a step" className="space-y-3 rounded-lg border border-slate-200 bg-white p-4">
      <h3 className="font-semibold text-slate-800">Add a step</h3>
      <div>
        <label htmlFor={ids.type} className="block text-sm font-medium text-slate-700">Step type</label>
        <select id={ids.type} className="input mt-1" value={type} onChange={(event) => {
          const next = event.target.value as StepType
          setType(next)
          setConfig(DEFAULT_CONFIG[next])
        }}>
          {ADDABLE_TYPES.map((candidate) => <option key={candidate} value={candidate}>{TYPE_LABELS[candidate]}</option>)}
        </select>
      </div>
      <div>
        <label htmlFor={ids.name} className="block text-sm font-medium text-slate-700">Name (optional)</label>
        <input id={ids.name} className="input mt-1" value={name} placeholder={TYPE_LABELS[type]} onChange={(event) => setName(event.target.value)} />
      </div>
      <StepConfigFields type={type} config={config} onChange={setConfig} errors={add.error?.fieldErrors} />
      <div>
        <label htmlFor={ids.after} className="block text-sm font-medium text-slate-700">After</label>
        <select id={ids.after} className="input mt-1" value={after} onChange={(event) => setAfter(event.target.value)}>
          <option value="">Not connected yet</option>
          {outlets.map(({ step, outlet }) => (
            <option key={slot(step.id, outlet.id)} value={slot(step.id, outlet.id)}>
              {step.name}{outlet.id === "next" ? "" : ` (${outlet.label.toLowerCase()})`}{taken(step.id, outlet.id) ? ", inserted before what follows" : ""}
            </option>
          ))}
        </select>
      </div>
      <button type="submit" className="btn-primary" disabled={add.isPending}>{add.isPending ? "Adding…" : "Add step"}</button>
      {added && !add.isPending && !add.error && <p role="status" className="text-sm text-green-800">Added {added.name}.</p>}
      <SaveError error={add.error} />
    </form>
  )
}

/** One step: its name and config, where each of its outlets leads, and deleting it. */
function StepPanel({ workflow, step, onConnect, connecting, onDelete }: {
  readonly workflow: WorkflowData
  readonly step: Step
  readonly onConnect: (outlet: Outlet, to: string | null) => void
  readonly connecting: boolean
  readonly onDelete: () => void
}) {
  const nameId = useId()
  const [name, setName] = useState(step.name)
  const [config, setConfig] = useState<Config>(step.config)
  const save = useApiMutation(
    (client, _: void) => client.workflows.updateStep({ params: { id: workflow.id, stepId: step.id }, payload: { name: name.trim() || step.name, ...(step.type === "TRIGGER" ? {} : { config }) } }),
    { invalidates: [["workflows"]] }
  )
  const targets = workflow.steps.filter((candidate) => candidate.id !== step.id && candidate.type !== "TRIGGER")
  return (
    <div className="space-y-4">
      <form
        aria-label="Edit the step"
        className="space-y-3 rounded-lg border border-slate-200 bg-white p-4"
        onSubmit={(event) => {
          event.preventDefault()
          save.mutate()
        }}
      >
        <h3 className="font-semibold text-slate-800">{TYPE_LABELS[step.type]}</h3>
        <div>
          <label htmlFor={nameId} className="block text-sm font-medium text-slate-700">Name</label>
          <input id={nameId} className="input mt-1" value={name} onChange={(event) => setName(event.target.value)} />
        </div>
        <StepConfigFields type={step.type} config={config} onChange={setConfig} errors={save.error?.fieldErrors} />
        <div className="flex flex-wrap gap-2">
          <button type="submit" className="btn-primary" disabled={save.isPending}>{save.isPending ? "Saving…" : "Save step"}</button>
          {step.type !== "TRIGGER" && <button type="button" className="btn-secondary text-red-700" onClick={onDelete}>Delete step</button>}
        </div>
        <SaveError error={save.error} />
      </form>
      {outletsOf(step.type).length > 0 && (
        <fieldset className="space-y-3 rounded-lg border border-slate-200 bg-white p-4" disabled={connecting}>
          <legend className="px-1 font-semibold text-slate-800">Goes on to</legend>
          {outletsOf(step.type).map((outlet) => {
            const current = workflow.transitions.find((transition) => transition.fromStepId === step.id && outletOf(transition) === outlet.id)
            return (
              <OutletSelect key={outlet.id} outlet={outlet} value={current?.toStepId ?? ""} targets={targets} onChange={(to) => onConnect(outlet, to)} />
            )
          })}
        </fieldset>
      )}
    </div>
  )
}

function OutletSelect({ outlet, value, targets, onChange }: {
  readonly outlet: Outlet
  readonly value: string
  readonly targets: ReadonlyArray<Step>
  readonly onChange: (to: string | null) => void
}) {
  const id = useId()
  const label = outlet.id === "next" ? "Next step" : outlet.branch ? `When ${outlet.label.toLowerCase()}` : outlet.id === "EVENT" ? "When the event arrives" : "On timeout"
  return (
    <div>
      <label htmlFor={id} className="block text-sm font-medium text-slate-700">{label}</label>
      <select id={id} className="input mt-1" value={value} onChange={(event) => onChange(event.target.value || null)}>
        <option value="">Nothing (the execution completes)</option>
        {targets.map((target) => <option key={target.id} value={target.id}>{TYPE_LABELS[target.type]}: {target.name}</option>)}
      </select>
    </div>
  )
}
