/**
 * Workflows: the list with their trigger and a form to create one; one workflow with its trigger,
 * enabling and re-entry, the graph editor (pages/workflows/Editor.tsx) and its executions.
 */
import { type FormEvent, useId, useMemo, useState } from "react"
import { Link, useNavigate, useParams } from "react-router"
import { useApiMutation, useApiQuery, useProjectId } from "../api/hooks.ts"
import { Confirm } from "../components/Confirm.tsx"
import { Card, MutationError } from "../components/Form.tsx"
import { Badge, cell, formatDate, Page, Section, Table, wideOnly } from "../components/Page.tsx"
import { Empty, QueryView } from "../components/States.tsx"
import { WorkflowEditor } from "./workflows/Editor.tsx"
import { Executions, useShownExecution } from "./workflows/Executions.tsx"
import type { WorkflowData } from "./workflows/model.ts"
import { EventNameSuggestions } from "./workflows/StepConfig.tsx"

const trigger = (workflow: { readonly triggerType: string; readonly triggerConfig: { readonly eventName?: string | undefined } }) =>
  workflow.triggerType === "EVENT" ? `Event ${workflow.triggerConfig.eventName ?? ""}` : "Started by hand"

function NewWorkflow() {
  const projectId = useProjectId()
  const navigate = useNavigate()
  const ids = { name: useId(), event: useId(), list: useId() }
  const [name, setName] = useState("")
  const [eventName, setEventName] = useState("")
  const create = useApiMutation(
    (client, _: void) => client.workflows.create({ payload: { name: name.trim(), ...(eventName.trim() ? { eventName: eventName.trim() } : {}) } }),
    { invalidates: [["workflows"]], onSuccess: (workflow) => void navigate(`/p/${projectId}/workflows/${workflow.id}`) }
  )
  const submit = (event: FormEvent) => {
    event.preventDefault()
    create.mutate()
  }
  return (
    <Card title="New workflow">
      <form onSubmit={submit} aria-label="New workflow" className="grid gap-3 sm:grid-cols-[1fr_1fr_auto] sm:items-end">
        <div>
          <label htmlFor={ids.name} className="block text-sm font-medium text-slate-700">Name</label>
          <input id={ids.name} required className="input mt-1" value={name} onChange={(event) => setName(event.target.value)} />
        </div>
        <div>
          <label htmlFor={ids.event} className="block text-sm font-medium text-slate-700">Trigger event</label>
          <input id={ids.event} list={ids.list} className="input mt-1 font-mono" placeholder="signed-up" value={eventName} onChange={(event) => setEventName(event.target.value)} />
          <EventNameSuggestions id={ids.list} />
        </div>
        <button type="submit" className="btn-primary" disabled={create.isPending}>Create workflow</button>
      </form>
      <MutationError error={create.error} />
    </Card>
  )
}

export function WorkflowsPage() {
  const projectId = useProjectId()
  const query = useApiQuery(["workflows", "list"], (client) => client.workflows.list({}))
  return (
    <Page title="Workflows">
      <div className="mb-6"><NewWorkflow /></div>
      <QueryView query={query} isEmpty={(list) => list.length === 0} empty={<Empty title="No workflows yet">Create one above: it starts with its trigger, disabled.</Empty>}>
        {(list) => (
          <Table label="Workflows" head={["Name", "Trigger", "State", ["Steps", wideOnly], ["Updated", wideOnly]]}>
            {list.map((workflow) => (
              <tr key={workflow.id} className="hover:bg-slate-50">
                <td className={cell}><Link to={`/p/${projectId}/workflows/${workflow.id}`} className="link">{workflow.name}</Link></td>
                <td className={`${cell} break-all font-mono text-xs`}>{trigger(workflow)}</td>
                <td className={cell}>{workflow.enabled ? <Badge tone="green">enabled</Badge> : <Badge>disabled</Badge>}</td>
                <td className={`${cell} ${wideOnly} tabular-nums`}>{workflow.steps.length}</td>
                <td className={`${cell} ${wideOnly} whitespace-nowrap text-slate-600`}>{formatDate(workflow.updatedAt)}</td>
              </tr>
            ))}
          </Table>
        )}
      </QueryView>
    </Page>
  )
}

/** The trigger's event, enabling, re-entry and deleting the workflow. */
function Settings({ workflow }: { readonly workflow: WorkflowData }) {
  const projectId = useProjectId()
  const navigate = useNavigate()
  const ids = { event: useId(), list: useId() }
  const [eventName, setEventName] = useState(workflow.triggerConfig.eventName ?? "")
  const [deleting, setDeleting] = useState(false)
  const update = useApiMutation(
    (client, payload: { enabled?: boolean; allowReentry?: boolean; triggerType?: "EVENT" | "MANUAL"; triggerConfig?: { eventName?: string } }) =>
      client.workflows.update({ params: { id: workflow.id }, payload }),
    { invalidates: [["workflows"]] }
  )
  const remove = useApiMutation(
    (client, _: void) => client.workflows.delete({ params: { id: workflow.id } }),
    { invalidates: [["workflows", "list"]], onSuccess: () => void navigate(`/p/${projectId}/workflows`) }
  )
  return (
    <Card>
      <div className="flex flex-wrap items-center gap-3">
        {workflow.enabled ? <Badge tone="green">enabled</Badge> : <Badge>disabled</Badge>}
        <button type="button" className={workflow.enabled ? "btn-secondary" : "btn-primary"} disabled={update.isPending} onClick={() => update.mutate({ enabled: !workflow.enabled })}>
          {workflow.enabled ? "Disable" : "Enable"}
        </button>
        <label className="flex items-center gap-2 text-sm text-slate-700">
          <input type="checkbox" checked={workflow.allowReentry} disabled={update.isPending} onChange={(event) => update.mutate({ allowReentry: event.target.checked })} />
          A contact may run it again
        </label>
        {workflow.billingHold && <Badge tone="amber">{workflow.billingHold}</Badge>}
      </div>
      <form
        aria-label="Trigger"
        className="mt-4 flex flex-wrap items-end gap-3"
        onSubmit={(event) => {
          event.preventDefault()
          update.mutate(eventName.trim() ? { triggerType: "EVENT", triggerConfig: { eventName: eventName.trim() } } : { triggerType: "MANUAL" })
        }}
      >
        <div className="min-w-0 basis-full sm:basis-64 sm:grow">
          <label htmlFor={ids.event} className="block text-sm font-medium text-slate-700">Trigger event</label>
          <input id={ids.event} list={ids.list} className="input mt-1 font-mono" placeholder="Empty: started by hand only" value={eventName} onChange={(event) => setEventName(event.target.value)} />
          <EventNameSuggestions id={ids.list} />
        </div>
        <button type="submit" className="btn-secondary" disabled={update.isPending}>Save trigger</button>
        <button type="button" className="btn-secondary text-red-700" onClick={() => setDeleting(true)}>Delete workflow</button>
      </form>
      <MutationError error={update.error} />
      <Confirm
        open={deleting}
        title={`Delete ${workflow.name}?`}
        action="Delete workflow"
        typed={workflow.name}
        danger
        busy={remove.isPending}
        onCancel={() => {
          setDeleting(false)
          remove.reset()
        }}
        onConfirm={() => remove.mutate()}
      >
        <p>Its steps and execution history go too. Active executions must be cancelled first.</p>
        <MutationError error={remove.error} />
      </Confirm>
    </Card>
  )
}

export function WorkflowPage() {
  const { workflowId = "" } = useParams()
  const projectId = useProjectId()
  const workflow = useApiQuery(["workflows", "get", workflowId], (client) => client.workflows.get({ params: { id: workflowId } }))
  const shown = useShownExecution(workflowId)
  const current = shown.query.data?.currentStepId
  const currentStepIds = useMemo(() => new Set(current ? [current] : []), [current])
  return (
    <QueryView query={workflow}>
      {(workflow) => (
        <Page title={workflow.name}>
          <p className="-mt-4 mb-6 text-sm"><Link to={`/p/${projectId}/workflows`} className="link">All workflows</Link></p>
          <div className="mb-8"><Settings key={workflow.triggerConfig.eventName ?? ""} workflow={workflow} /></div>
          <Section title="Steps">
            <WorkflowEditor workflow={workflow} currentStepIds={currentStepIds} />
          </Section>
          <Executions workflow={workflow} />
        </Page>
      )}
    </QueryView>
  )
}
