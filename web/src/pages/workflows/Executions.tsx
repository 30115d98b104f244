/**
 * A workflow's executions: filtered by status, page by page, refreshed while the page is open; one
 * execution's step history; cancelling one or all active ones (each after a confirmation).
 */
import { Effect } from "effect"
import { useState } from "react"
import { Link, useSearchParams } from "react-router"
import { useApiMutation, useApiQuery, useProjectId } from "../../api/hooks.ts"
import { Confirm } from "../../components/Confirm.tsx"
import { MutationError } from "../../components/Form.tsx"
import { Badge, cell, formatDate, Section, Table, wideOnly } from "../../components/Page.tsx"
import { NumberedPager } from "../../components/Pager.tsx"
import { Empty, QueryView } from "../../components/States.tsx"
import { EXECUTION_STATUSES, type ExecutionData, isActive, statusTone, TYPE_LABELS, type WorkflowData } from "./model.ts"

const REFRESH = 2_000
const PAGE_SIZE = 20

/** The execution shown (the URL's ?execution=), with its step history: shared by the list and the graph's highlight. */
export const useShownExecution = (workflowId: string) => {
  const [params] = useSearchParams()
  const executionId = params.get("execution")
  const query = useApiQuery(
    ["workflows", "execution", workflowId, executionId],
    (client) => client.workflows.getExecution({ params: { id: workflowId, executionId: executionId ?? "" } }),
    { enabled: executionId !== null, refetchInterval: REFRESH }
  )
  return { executionId, query }
}

export function Executions({ workflow }: { readonly workflow: WorkflowData }) {
  const [params, setParams] = useSearchParams()
  const status = params.get("status") ?? ""
  const [page, setPage] = useState(1)
  const [confirming, setConfirming] = useState<"all" | ExecutionData | null>(null)
  const executions = useApiQuery(
    ["workflows", "executions", workflow.id, status, page],
    (client) => client.workflows.listExecutions({ params: { id: workflow.id }, query: { page: String(page), pageSize: String(PAGE_SIZE), ...(status ? { status } : {}) } }),
    { refetchInterval: REFRESH }
  )
  const stepName = (id: string | null) => workflow.steps.find((step) => step.id === id)?.name ?? "—"
  const show = (patch: Record<string, string | null>) =>
    setParams((current) => {
      const next = new URLSearchParams(current)
      for (const [key, value] of Object.entries(patch)) {
        if (value === null || value === "") next.delete(key)
        else next.set(key, value)
      }
      return next
    }, { replace: true })
  const cancel = useApiMutation(
    (client, target: "all" | ExecutionData) =>
      target === "all"
        ? client.workflows.cancelAll({ params: { id: workflow.id } }).pipe(Effect.asVoid)
        : client.workflows.cancelExecution({ params: { id: workflow.id, executionId: target.id } }).pipe(Effect.asVoid),
    { invalidates: [["workflows", "executions", workflow.id], ["workflows", "execution", workflow.id]], onSuccess: () => setConfirming(null) }
  )
  return (
    <Section title="Executions">
      <div className="mb-3 flex flex-wrap items-end justify-between gap-3">
        <div>
          <label htmlFor="execution-status" className="block text-sm font-medium text-slate-700">Status</label>
          <select id="execution-status" className="input mt-1 w-48" value={status} onChange={(event) => {
            setPage(1)
            show({ status: event.target.value })
          }}>
            <option value="">All</option>
            {EXECUTION_STATUSES.map((candidate) => <option key={candidate} value={candidate}>{candidate.toLowerCase()}</option>)}
          </select>
        </div>
        <button type="button" className="btn-secondary" onClick={() => setConfirming("all")}>Cancel all active</button>
      </div>
      <QueryView query={executions} isEmpty={(result) => result.total === 0} empty={<Empty title={status ? `No ${status.toLowerCase()} executions` : "No executions yet"}>An execution starts when the trigger's event is tracked for a contact.</Empty>}>
        {(result) => (
          <>
            <Table label="Executions" head={["Contact", "Status", ["Current step", wideOnly], ["Started", wideOnly], ""]}>
              {result.data.map((execution) => (
                <tr key={execution.id}>
                  <td className={`${cell} max-w-64 break-all`}><ContactOf execution={execution} /></td>
                  <td className={cell}><Badge tone={statusTone(execution.status)}>{execution.status.toLowerCase()}</Badge></td>
                  <td className={`${cell} ${wideOnly}`}>{stepName(execution.currentStepId)}</td>
                  <td className={`${cell} ${wideOnly} whitespace-nowrap text-slate-600`}>{formatDate(execution.startedAt)}</td>
                  <td className={`${cell} whitespace-nowrap text-right`}>
                    <button type="button" className="link mr-3" onClick={() => show({ execution: execution.id })}>History</button>
                    {isActive(execution.status) && <button type="button" className="link text-red-700" onClick={() => setConfirming(execution)}>Cancel</button>}
                  </td>
                </tr>
              ))}
            </Table>
            <NumberedPager page={page} totalPages={result.totalPages} onPage={setPage} />
          </>
        )}
      </QueryView>
      <ExecutionHistory workflow={workflow} onClose={() => show({ execution: null })} />
      <Confirm
        open={confirming !== null}
        title={confirming === "all" ? "Cancel every active execution?" : "Cancel this execution?"}
        action={confirming === "all" ? "Cancel all" : "Cancel execution"}
        danger
        busy={cancel.isPending}
        onCancel={() => {
          setConfirming(null)
          cancel.reset()
        }}
        onConfirm={() => confirming && cancel.mutate(confirming)}
      >
        <p>{confirming === "all" ? "Every running or waiting execution of this workflow stops where it is." : "It stops where it is; the contact can enter again only if re-entry is allowed."}</p>
        <MutationError error={cancel.error} />
      </Confirm>
    </Section>
  )
}

/** The execution's contact by email, linked to their page; a deleted contact says so. */
function ContactOf({ execution }: { readonly execution: ExecutionData }) {
  const projectId = useProjectId()
  if (execution.contactEmail === null) return <span className="text-slate-500">a deleted contact</span>
  return <Link to={`/p/${projectId}/contacts/${execution.contactId}`} className="link">{execution.contactEmail}</Link>
}

function ExecutionHistory({ workflow, onClose }: { readonly workflow: WorkflowData; readonly onClose: () => void }) {
  const { executionId, query } = useShownExecution(workflow.id)
  if (executionId === null) return null
  const stepName = (id: string) => workflow.steps.find((step) => step.id === id)?.name ?? "(deleted step)"
  return (
    <section aria-label="Execution history" className="mt-6 rounded-lg border border-slate-200 bg-white p-4">
      <div className="mb-3 flex flex-wrap items-center justify-between gap-2">
        <h3 className="font-semibold text-slate-800">
          Execution{query.data && <> for <ContactOf execution={query.data} /></>}
        </h3>
        <button type="button" className="btn-secondary" onClick={onClose}>Close</button>
      </div>
      <QueryView query={query}>
        {(execution) => (
          <>
            <p className="mb-3 text-sm text-slate-700">
              <Badge tone={statusTone(execution.status)}>{execution.status.toLowerCase()}</Badge>
              {" "}started {formatDate(execution.startedAt)}
              {execution.completedAt && <>, ended {formatDate(execution.completedAt)}</>}
              {execution.exitReason && <> · {execution.exitReason}</>}
              {execution.error && <span className="text-red-800"> · {execution.error}</span>}
            </p>
            {execution.steps.length === 0
              ? <Empty title="No steps run yet" />
              : (
                <Table label="Step history" head={["Step", "Status", ["Attempts", wideOnly], ["Started", wideOnly], "Ended"]}>
                  {execution.steps.map((run) => (
                    <tr key={run.id}>
                      <td className={cell}>
                        <span className="font-medium">{stepName(run.stepId)}</span>
                        <span className="block text-xs text-slate-500">{TYPE_LABELS[run.stepType as keyof typeof TYPE_LABELS] ?? run.stepType}</span>
                        {run.error && <span className="block text-xs text-red-800">{run.error}</span>}
                      </td>
                      <td className={cell}><Badge tone={statusTone(run.status)}>{run.status.toLowerCase()}</Badge></td>
                      <td className={`${cell} ${wideOnly} tabular-nums`}>{run.attempts}</td>
                      <td className={`${cell} ${wideOnly} whitespace-nowrap text-slate-600`}>{formatDate(run.startedAt)}</td>
                      <td className={`${cell} whitespace-nowrap text-slate-600`}>{formatDate(run.completedAt)}</td>
                    </tr>
                  ))}
                </Table>
              )}
          </>
        )}
      </QueryView>
    </section>
  )
}
