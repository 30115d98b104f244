/** Settings: one tab per concern; a tab the user's role cannot use is not offered. */
import { useEffect, useRef } from "react"
import { NavLink, Outlet, useLocation } from "react-router"
import type { Permission } from "../../../../src/domain/permissions.ts"
import { useProjectId } from "../../api/hooks.ts"
import { useCurrentProject } from "../../api/session.ts"
import { Page } from "../../components/Page.tsx"
import { ErrorState, Loading } from "../../components/States.tsx"

const TABS: ReadonlyArray<readonly [path: string, label: string, needs: Permission]> = [
  ["members", "Members", "view"],
  ["keys", "API keys", "view"],
  ["sending", "Sending", "view"],
  ["billing", "Billing", "view"],
  ["security", "Security", "view"],
  ["danger", "Danger zone", "manage"]
]

export function SettingsLayout() {
  const projectId = useProjectId()
  const { can } = useCurrentProject()
  const offered = TABS.filter(([, , needs]) => can(needs))
  const tabs = useRef<HTMLElement>(null)
  const { pathname } = useLocation()
  // On a narrow screen the tabs scroll sideways: keep the current one in sight.
  useEffect(() => {
    tabs.current?.querySelector("[aria-current=page]")?.scrollIntoView({ block: "nearest", inline: "nearest" })
  }, [pathname, offered.length])
  return (
    <Page title="Settings">
      <nav ref={tabs} aria-label="Settings" className="mb-6 overflow-x-auto border-b border-slate-200">
        <ul className="flex gap-1">
          {offered.map(([path, label]) => (
            <li key={path}>
              <NavLink
                to={`/p/${projectId}/settings/${path}`}
                className={({ isActive }) =>
                  `block whitespace-nowrap border-b-2 px-3 py-2 text-sm font-medium ${isActive ? "border-indigo-600 text-indigo-800" : "border-transparent text-slate-600 hover:text-slate-900"}`}
              >
                {label}
              </NavLink>
            </li>
          ))}
        </ul>
      </nav>
      <Outlet />
    </Page>
  )
}

/**
 * Renders `children` when the user's role allows `permission`; otherwise says who may (the API would
 * refuse anyway: this only spares the user a form that cannot work).
 */
export function RequiresRole({ permission, children }: { readonly permission: Permission; readonly children: React.ReactNode }) {
  const { projects, project, can } = useCurrentProject()
  if (projects.isPending) return <Loading />
  if (projects.isError) return <ErrorState failure={projects.error} onRetry={() => void projects.refetch()} />
  if (!can(permission)) {
    return (
      <div role="alert" className="rounded-lg border border-amber-200 bg-amber-50 px-5 py-4 text-amber-900">
        <p className="font-medium">{permission === "own" ? "Only owners" : "Only admins and owners"} of this project can open this page.</p>
        <p className="mt-1 text-sm">Your role is {project?.role ?? "unknown"}.</p>
      </div>
    )
  }
  return <>{children}</>
}
