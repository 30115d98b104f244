/**
 * One workflow: its trigger, enabling, re-entry and deletion, the graph editor (Editor.tsx) and its
 * executions (Executions.tsx). Loaded when a workflow is opened (it brings @xyflow/react).
 */
import { useId, useMemo, useState } from "react"
import { Link, useNavigate, useParams } from "react-router"
import { useApiMutation, useApiQuery, useProjectId } from "../../api/hooks.ts"
import { Confirm } from "../../components/Confirm.tsx"
import { Card, MutationError } from "../../components/Form.tsx"
import { Badge, Page, Section } from "../../components/Page.tsx"
import { QueryView } from "../../components/States.tsx"
import { WorkflowEditor } from "./Editor.tsx"
import { Executions, useShownExecution } from "./Executions.tsx"
import type { WorkflowData } from "./model.ts"
import { EventNameSuggestions } from "./StepConfig.tsx"

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
