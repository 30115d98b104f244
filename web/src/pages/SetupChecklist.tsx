/** What a new project still lacks (`/projects/:id/setup-state`), each step linking to where it is done. */
import { Link } from "react-router"
import { useApiQuery, useProjectId } from "../api/hooks.ts"
import { useServerConfig } from "../api/session.ts"
import { ErrorState } from "../components/States.tsx"

const STEPS = [
  ["hasVerifiedDomain", "Verify a sending domain", "domains"],
  ["hasTemplate", "Create a template", "templates"],
  ["hasContact", "Add a contact", "contacts"],
  ["hasTrackedEvent", "Track an event", "events"],
  ["hasSentEmail", "Send an email", "campaigns"]
] as const

export function SetupChecklist() {
  const projectId = useProjectId()!
  const state = useApiQuery(["setup-state"], (client) => client.accounts.setupState({ params: { id: projectId } }))
  // Under local delivery no domain needs verifying: that step is shown as not needed, and counts as done.
  const config = useServerConfig()
  const domainNeeded = config.data?.delivery.verifiedDomainRequired !== false
  if (state.isError) return <div className="mb-6"><ErrorState failure={state.error} /></div>
  if (!state.data || state.data.complete || config.isPending) return null
  const data = state.data
  const isDone = (key: (typeof STEPS)[number][0]) => data[key] || (key === "hasVerifiedDomain" && !domainNeeded)
  const done = STEPS.filter(([key]) => isDone(key)).length
  return (
    <section aria-label="Setup" className="mb-8 rounded-lg border border-indigo-200 bg-white p-5 shadow-sm">
      <div className="flex items-baseline justify-between gap-3">
        <h2 className="text-lg font-semibold text-slate-800">Get started</h2>
        <p className="text-sm text-slate-500" data-testid="setup-progress">{done} of {STEPS.length} done</p>
      </div>
      <ol className="mt-3 space-y-2">
        {STEPS.map(([key, label, path]) => {
          const finished = isDone(key)
          const notNeeded = finished && !data[key]
          return (
            <li key={key} className="flex items-center gap-3" data-done={finished}>
              <span
                aria-hidden="true"
                className={`flex size-5 shrink-0 items-center justify-center rounded-full text-xs ${finished ? "bg-green-600 text-white" : "border border-slate-300"}`}
              >
                {finished ? "✓" : ""}
              </span>
              {finished
                ? notNeeded
                  ? <span className="text-slate-500">{label}: not needed while mail is delivered locally</span>
                  : <span className="text-slate-500 line-through">{label}<span className="sr-only"> (done)</span></span>
                : <Link className="link" to={`/p/${projectId}/${path}`}>{label}</Link>}
            </li>
          )
        })}
      </ol>
    </section>
  )
}
