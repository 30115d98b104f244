/** Workflows: the list with their trigger, and one workflow with its steps, transitions and executions. */
import { Link, useParams } from "react-router"
import { useApiQuery, useProjectId } from "../api/hooks.ts"
import { Badge, cell, Fields, formatDate, Page, Section, Table } from "../components/Page.tsx"
import { Empty, QueryView } from "../components/States.tsx"

const trigger = (workflow: { readonly triggerType: string; readonly triggerConfig: { readonly eventName?: string | undefined } }) =>
  workflow.triggerType === "EVENT" ? `Event ${workflow.triggerConfig.eventName ?? ""}` : "Started by hand"

export function WorkflowsPage() {
  const projectId = useProjectId()
  const query = useApiQuery(["workflows", "list"], (client) => client.workflows.list({}))
  return (
    <Page title="Workflows">
      <QueryView query={query} isEmpty={(list) => list.length === 0} empty={<Empty title="No workflows yet">Create one with <code>POST /workflows</code>.</Empty>}>
        {(list) => (
          <Table label="Workflows" head={["Name", "Trigger", "State", "Steps", "Updated"]}>
            {list.map((workflow) => (
              <tr key={workflow.id} className="hover:bg-slate-50">
                <td className={cell}><Link to={`/p/${projectId}/workflows/${workflow.id}`} className="link">{workflow.name}</Link></td>
                <td className={`${cell} font-mono text-xs`}>{trigger(workflow)}</td>
                <td className={cell}>{workflow.enabled ? <Badge tone="green">enabled</Badge> : <Badge>disabled</Badge>}</td>
                <td className={`${cell} tabular-nums`}>{workflow.steps.length}</td>
                <td className={`${cell} whitespace-nowrap text-slate-600`}>{formatDate(workflow.updatedAt)}</td>
              </tr>
            ))}
          </Table>
        )}
      </QueryView>
    </Page>
  )
}

export function WorkflowPage() {
  const { workflowId = "" } = useParams()
  const projectId = useProjectId()
  const workflow = useApiQuery(["workflows", "get", workflowId], (client) => client.workflows.get({ params: { id: workflowId } }))
  const executions = useApiQuery(
    ["workflows", "executions", workflowId],
    (client) => client.workflows.listExecutions({ params: { id: workflowId }, query: { page: "1", pageSize: "20" } })
  )
  return (
    <QueryView query={workflow}>
      {(workflow) => {
        const stepName = (id: string | null) => workflow.steps.find((step) => step.id === id)?.name ?? "—"
        return (
          <Page title={workflow.name}>
            <p className="-mt-4 mb-6 text-sm"><Link to={`/p/${projectId}/workflows`} className="link">All workflows</Link></p>
            <Section title="Workflow">
              <Fields
                items={[
                  ["Trigger", trigger(workflow)],
                  ["State", workflow.enabled ? <Badge tone="green">enabled</Badge> : <Badge>disabled</Badge>],
                  ["Re-entry", workflow.allowReentry ? "Allowed" : "Once per contact"],
                  ["Description", workflow.description ?? "—"],
                  ["Updated", formatDate(workflow.updatedAt)]
                ]}
              />
            </Section>
            <Section title="Steps">
              <ol className="space-y-2">
                {workflow.steps.map((step) => (
                  <li key={step.id} className="rounded-lg border border-slate-200 bg-white px-4 py-3">
                    <div className="flex flex-wrap items-center gap-2">
                      <Badge tone="indigo">{step.type.toLowerCase().replaceAll("_", " ")}</Badge>
                      <span className="font-medium">{step.name}</span>
                    </div>
                    {Object.keys(step.config).length > 0 && <p className="mt-1 break-all font-mono text-xs text-slate-600">{JSON.stringify(step.config)}</p>}
                    <ul className="mt-1 text-sm text-slate-600">
                      {workflow.transitions.filter((transition) => transition.fromStepId === step.id).map((transition) => (
                        <li key={transition.id}>→ {transition.branch ? `${transition.branch}: ` : ""}{stepName(transition.toStepId)}</li>
                      ))}
                    </ul>
                  </li>
                ))}
              </ol>
            </Section>
            <Section title="Executions">
              <QueryView query={executions} isEmpty={(result) => result.total === 0} empty={<Empty title="No executions yet" />}>
                {(result) => (
                  <Table label="Executions" head={["Contact", "Status", "Current step", "Started"]}>
                    {result.data.map((execution) => (
                      <tr key={execution.id}>
                        <td className={cell}><Link to={`/p/${projectId}/contacts/${execution.contactId}`} className="link font-mono text-xs">{execution.contactId}</Link></td>
                        <td className={cell}><Badge>{execution.status.toLowerCase()}</Badge></td>
                        <td className={cell}>{stepName(execution.currentStepId)}</td>
                        <td className={`${cell} whitespace-nowrap text-slate-600`}>{formatDate(execution.startedAt)}</td>
                      </tr>
                    ))}
                  </Table>
                )}
              </QueryView>
            </Section>
          </Page>
        )
      }}
    </QueryView>
  )
}
