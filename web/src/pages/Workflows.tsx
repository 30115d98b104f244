/**
 * Workflows: the list with their trigger and a form to create one. One workflow (its editor) is
 * pages/workflows/Workflow.tsx, loaded when opened.
 */
import { type FormEvent, useId, useState } from "react"
import { Link, useNavigate } from "react-router"
import { useApiMutation, useApiQuery, useProjectId } from "../api/hooks.ts"
import { Card, MutationError } from "../components/Form.tsx"
import { Badge, cell, formatDate, Page, Table, wideOnly } from "../components/Page.tsx"
import { Empty, QueryView } from "../components/States.tsx"
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
