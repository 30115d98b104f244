/** Irreversible actions, each behind the project's name typed out: reset its data (ADMIN), delete it (OWNER). */
import { useQueryClient } from "@tanstack/react-query"
import { useState } from "react"
import { useNavigate } from "react-router"
import { projectKey, useApiMutation, useProjectId } from "../../api/hooks.ts"
import { accountKey, useCurrentProject } from "../../api/session.ts"
import { Confirm } from "../../components/Confirm.tsx"
import { Card, MutationError, Notice } from "../../components/Form.tsx"
import { formatDate } from "../../components/Page.tsx"
import { RequiresRole } from "./Settings.tsx"

export function DangerPage() {
  return <RequiresRole permission="manage"><Danger /></RequiresRole>
}

function Danger() {
  const projectId = useProjectId()!
  const { project, can } = useCurrentProject()
  const queryClient = useQueryClient()
  const navigate = useNavigate()
  const [confirming, setConfirming] = useState<"reset" | "delete" | null>(null)
  const reset = useApiMutation((client, _: void) => client.accounts.resetProject({ params: { id: projectId } }), {
    onSuccess: async () => {
      setConfirming(null)
      // Every list of the project is now empty: refetch whatever is cached.
      await queryClient.invalidateQueries({ queryKey: projectKey(projectId, []) })
    }
  })
  const remove = useApiMutation((client, _: void) => client.accounts.deleteProject({ params: { id: projectId } }), {
    onSuccess: async () => {
      setConfirming(null)
      queryClient.removeQueries({ queryKey: projectKey(projectId, []) })
      await queryClient.invalidateQueries({ queryKey: accountKey("projects") })
      void navigate("/p")
    }
  })
  const name = project?.name ?? ""
  return (
    <div className="space-y-6">
      <Card title="Reset data" tone="danger">
        <p className="text-sm text-slate-700">
          Deletes every contact, event, email, segment, campaign, workflow, template and dead letter. Keys, members, domains and suppressions stay.
        </p>
        <button type="button" className="btn-danger mt-4" onClick={() => setConfirming("reset")}>Reset data…</button>
        {reset.data && <div className="mt-4"><Notice>The project's data was reset at {formatDate(reset.data.resetAt)}.</Notice></div>}
      </Card>
      {can("own") && (
        <Card title="Delete project" tone="danger">
          <p className="text-sm text-slate-700">Deletes the project and everything in it, its keys and domains included.</p>
          <button type="button" className="btn-danger mt-4" onClick={() => setConfirming("delete")}>Delete project…</button>
        </Card>
      )}
      <Confirm
        open={confirming === "reset"}
        title={`Reset ${name}?`}
        action="Reset data"
        typed={name}
        danger
        busy={reset.isPending}
        onConfirm={() => reset.mutate()}
        onCancel={() => setConfirming(null)}
      >
        This cannot be undone.
        <MutationError error={reset.error} />
      </Confirm>
      <Confirm
        open={confirming === "delete"}
        title={`Delete ${name}?`}
        action="Delete project"
        typed={name}
        danger
        busy={remove.isPending}
        onConfirm={() => remove.mutate()}
        onCancel={() => setConfirming(null)}
      >
        This cannot be undone.
        <MutationError error={remove.error} />
      </Confirm>
    </div>
  )
}
