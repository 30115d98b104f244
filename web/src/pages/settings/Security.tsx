/**
 * Bounce and complaint rates over the last 7 days against the thresholds that disable a project, and its
 * suspensions; an OWNER re-enables a disabled project here.
 */
import { useQueryClient } from "@tanstack/react-query"
import { useApiMutation, useApiQuery, useProjectId } from "../../api/hooks.ts"
import { accountKey, useCurrentProject } from "../../api/session.ts"
import { Card, MutationError } from "../../components/Form.tsx"
import { Badge, cell, Fields, formatDate, Table } from "../../components/Page.tsx"
import { QueryView } from "../../components/States.tsx"

const SECURITY = ["security"]
const percent = (value: number) => `${value.toFixed(2)} %`

export function SecurityPage() {
  const projectId = useProjectId()!
  const { can } = useCurrentProject()
  const queryClient = useQueryClient()
  const security = useApiQuery(SECURITY, (client) => client.accounts.projectSecurity({ params: { id: projectId } }))
  const enable = useApiMutation((client, _: void) => client.accounts.updateProject({ params: { id: projectId }, payload: { disabled: false } }), {
    invalidates: [SECURITY],
    onSuccess: () => queryClient.invalidateQueries({ queryKey: accountKey("projects") })
  })
  return (
    <QueryView query={security}>
      {(health) => (
        <div className="space-y-6">
          <Card title="Sending health">
            <Fields
              items={[
                ["Status", health.disabled ? <Badge tone="red">disabled: {health.disabledReason}</Badge> : <Badge tone="green">sending</Badge>],
                ["Since", formatDate(health.windowStart)],
                ["Emails sent", health.sends.toLocaleString()],
                ["Bounce rate", <Rate value={health.bounceRate} max={health.thresholds.maxBounceRate} count={health.bounces} />],
                ["Complaint rate", <Rate value={health.complaintRate} max={health.thresholds.maxComplaintRate} count={health.complaints} />]
              ]}
            />
            <p className="mt-3 text-sm text-slate-600">
              Over the last 7 days. From {health.thresholds.minSends} sends on, a project over either limit is disabled until an owner re-enables it.
            </p>
            {health.disabled && can("own") && (
              <button type="button" className="btn-primary mt-4" disabled={enable.isPending} onClick={() => enable.mutate()}>Re-enable sending</button>
            )}
            <MutationError error={enable.error} />
          </Card>
          {health.suspensions.length > 0 && (
            <Table label="Suspensions" head={["When", "Reason", "Bounce rate", "Complaint rate", "Lifted"]}>
              {health.suspensions.map((suspension) => (
                <tr key={suspension.id}>
                  <td className={cell}>{formatDate(suspension.createdAt)}</td>
                  <td className={cell}>{suspension.reason}</td>
                  <td className={cell}>{percent(suspension.bounceRate)}</td>
                  <td className={cell}>{percent(suspension.complaintRate)}</td>
                  <td className={cell}>{formatDate(suspension.liftedAt)}</td>
                </tr>
              ))}
            </Table>
          )}
        </div>
      )}
    </QueryView>
  )
}

function Rate({ value, max, count }: { readonly value: number; readonly max: number; readonly count: number }) {
  return (
    <span className="tabular-nums">
      <span className={value > max ? "font-semibold text-red-700" : ""}>{percent(value)}</span>
      <span className="text-slate-500"> ({count.toLocaleString()}; limit {percent(max)})</span>
    </span>
  )
}
