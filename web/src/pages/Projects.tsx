/** The signed-in user's projects, a new one (whose keys are shown once, here), and their password. */
import { useState } from "react"
import { Link } from "react-router"
import { useApiMutation } from "../api/hooks.ts"
import { accountKey, useProjects } from "../api/session.ts"
import { useQueryClient } from "@tanstack/react-query"
import { Card, Field, MutationError } from "../components/Form.tsx"
import { Badge, cell, formatDate, Page, Table, wideOnly } from "../components/Page.tsx"
import { Empty, QueryView } from "../components/States.tsx"
import { ChangePassword } from "./account/ChangePassword.tsx"
import { KeysShownOnce } from "./settings/Keys.tsx"

export function ProjectsPage() {
  const projects = useProjects()
  const queryClient = useQueryClient()
  const [name, setName] = useState("")
  const create = useApiMutation((client, name: string) => client.accounts.createProject({ payload: { name } }), {
    onSuccess: async () => {
      setName("")
      await queryClient.invalidateQueries({ queryKey: accountKey("projects") })
    }
  })
  return (
    <Page title="Projects">
      <div className="space-y-6">
        <QueryView query={projects} isEmpty={(list) => list.length === 0} empty={<Empty title="No projects yet">Create one below.</Empty>}>
          {(list) => (
            <Table label="Projects" head={["Name", "Your role", ["Created", wideOnly]]}>
              {list.map((project) => (
                <tr key={project.id}>
                  <td className={cell}>
                    <Link className="link" to={`/p/${project.id}`}>{project.name}</Link>
                    {project.disabled && <span className="ml-2"><Badge tone="red">disabled</Badge></span>}
                  </td>
                  <td className={cell}><Badge tone={project.role === "MEMBER" ? "slate" : "indigo"}>{project.role}</Badge></td>
                  <td className={`${cell} ${wideOnly} text-slate-600`}>{formatDate(project.createdAt)}</td>
                </tr>
              ))}
            </Table>
          )}
        </QueryView>
        <Card title="New project">
          <form
            className="flex flex-col gap-3 sm:flex-row sm:items-end"
            onSubmit={(event) => {
              event.preventDefault()
              create.mutate(name.trim())
            }}
          >
            <div className="flex-1">
              <Field label="Project name" value={name} onChange={(event) => setName(event.target.value)} required maxLength={100} />
            </div>
            <button type="submit" className="btn-primary" disabled={create.isPending || name.trim() === ""}>Create project</button>
          </form>
          <MutationError error={create.error} />
          {create.data && (
            <div className="mt-5">
              <KeysShownOnce keys={create.data} />
              <Link className="btn-primary mt-4" to={`/p/${create.data.id}`}>Open {create.data.name}</Link>
            </div>
          )}
        </Card>
        <ChangePassword />
      </div>
    </Page>
  )
}
