/** The project list (from the accounts API once it exists) and, until then, opening a project by its id. */
import { type FormEvent, useState } from "react"
import { useNavigate } from "react-router"
import { isUuid } from "../../../src/domain/uuid.ts"
import { Page } from "../components/Page.tsx"

export function ProjectsPage() {
  const navigate = useNavigate()
  const [id, setId] = useState("")
  const [problem, setProblem] = useState<string | null>(null)
  const open = (event: FormEvent) => {
    event.preventDefault()
    const trimmed = id.trim()
    if (!isUuid(trimmed)) return setProblem("A project id looks like 0190a5c4-7d2e-7b1a-9f3e-2c4d5e6f7a8b")
    navigate(`/p/${trimmed}`)
  }
  return (
    <Page title="Projects">
      <div className="space-y-6">
        <div className="rounded-lg border border-slate-200 bg-white p-6">
          <p className="text-slate-700">Your projects will be listed here once accounts exist.</p>
          <p className="mt-2 text-sm text-slate-600">
            Waits for issue #15, which adds <code className="rounded bg-slate-100 px-1.5 py-0.5 font-mono">GET /users/@me/projects</code>.
          </p>
        </div>
        <form onSubmit={open} className="rounded-lg border border-slate-200 bg-white p-6" noValidate>
          <label htmlFor="project-id" className="block text-sm font-medium text-slate-700">Open a project by its id</label>
          <div className="mt-2 flex flex-col gap-2 sm:flex-row">
            <input
              id="project-id"
              className="input font-mono"
              value={id}
              onChange={(event) => {
                setId(event.target.value)
                setProblem(null)
              }}
              aria-invalid={problem !== null}
              aria-describedby={problem ? "project-id-problem" : undefined}
              autoComplete="off"
              spellCheck={false}
            />
            <button type="submit" className="btn-primary">Open</button>
          </div>
          {problem && <p id="project-id-problem" className="mt-2 text-sm text-red-700">{problem}</p>}
        </form>
      </div>
    </Page>
  )
}
