/** Open and click tracking (the API has it); the send rate (the API does not: an operator sets it). */
import { useQueryClient } from "@tanstack/react-query"
import { useApiMutation, useProjectId } from "../../api/hooks.ts"
import { accountKey, useCurrentProject } from "../../api/session.ts"
import { Card, MutationError } from "../../components/Form.tsx"
import { ErrorState, Loading } from "../../components/States.tsx"

export function SendingPage() {
  const projectId = useProjectId()!
  const { projects, project, can } = useCurrentProject()
  const queryClient = useQueryClient()
  const setTracking = useApiMutation(
    (client, trackingEnabled: boolean) => client.accounts.updateProject({ params: { id: projectId }, payload: { trackingEnabled } }),
    { onSuccess: () => queryClient.invalidateQueries({ queryKey: accountKey("projects") }) }
  )
  if (projects.isError) return <ErrorState failure={projects.error} />
  if (!project) return <Loading />
  return (
    <div className="space-y-6">
      <Card title="Tracking">
        <label className="flex items-start gap-3">
          <input
            type="checkbox"
            className="mt-1 size-4 accent-indigo-600"
            checked={project.trackingEnabled}
            disabled={!can("manage") || setTracking.isPending}
            onChange={(event) => setTracking.mutate(event.target.checked)}
          />
          <span>
            <span className="block font-medium text-slate-800">Track opens and clicks</span>
            <span className="block text-sm text-slate-600">
              Adds an invisible pixel and rewrites links in this project's emails. {!can("manage") && "Admins and owners can change this."}
            </span>
          </span>
        </label>
        <MutationError error={setTracking.error} />
      </Card>
      <Card title="Send rate">
        <p className="text-sm text-slate-700">
          The number of emails per second is set by whoever runs this installation, not from the dashboard (the API has no
          endpoint for it): <code className="font-mono text-xs">npm run cli -- project settings --id {projectId} --send-rate N</code>, or{" "}
          <code className="font-mono text-xs">SEND_RATE_PER_SECOND</code> for every project.
        </p>
      </Card>
    </div>
  )
}
