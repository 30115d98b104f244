/**
 * The project shell: a sidebar from 1024 px, a Menu button below it (the menu closes on Escape, on a
 * click outside and on navigation), a skip link, and focus moved to the page after each navigation so
 * keyboard and screen-reader users start at the new content.
 */
import { useQueryClient } from "@tanstack/react-query"
import { lazy, Suspense, useEffect, useId, useRef, useState } from "react"
import { Link, NavLink, Outlet, useLocation, useNavigate, useParams } from "react-router"
import { useApiMutation } from "../api/hooks.ts"
import { LiveEventsProvider } from "../api/live.tsx"
import { forgetEverything, isAccountPage, useCurrentProject, useInstallation, useMe, useProjects } from "../api/session.ts"
import type { Permission } from "../../../src/domain/permissions.ts"
import { LocalDeliveryBanner } from "./Delivery.tsx"
import { ErrorBoundary } from "./ErrorBoundary.tsx"

/**
 * The project's pages, with the permission each needs (src/domain/permissions.ts, the table in docs/api-notes.md):
 * a MEMBER is not offered the domains page.
 */
const NAV: ReadonlyArray<readonly [path: string, label: string, needs: Permission]> = [
  ["", "Home", "view"],
  ["contacts", "Contacts", "content"],
  ["templates", "Templates", "content"],
  ["segments", "Segments", "content"],
  ["campaigns", "Campaigns", "content"],
  ["workflows", "Workflows", "content"],
  ["emails", "Emails", "content"],
  ["events", "Events", "content"],
  ["activity", "Activity", "content"],
  ["analytics", "Analytics", "content"],
  ["domains", "Domains", "manage"],
  ["destinations", "Destinations", "manage"],
  ["settings", "Settings", "view"]
]

/** On demand, out of the first load (its size budget: test/http/dashboard.test.ts); it shows only now and then. */
const DestinationsBanner = lazy(() => import("./DestinationsBanner.tsx").then((module) => ({ default: module.DestinationsBanner })))

function Nav({ projectId, onNavigate }: { readonly projectId: string; readonly onNavigate?: () => void }) {
  const { project, can } = useCurrentProject()
  // Until the project list says the role, offer every page (the API still decides).
  const offered = NAV.filter(([, , needs]) => project === undefined || can(needs))
  return (
    <nav aria-label="Project">
      <ul className="space-y-1">
        {offered.map(([path, label]) => (
          <li key={label}>
            <NavLink
              to={`/p/${projectId}${path ? `/${path}` : ""}`}
              end={path === ""}
              onClick={onNavigate}
              className={({ isActive }) =>
                `block rounded-md px-3 py-2 text-sm font-medium ${isActive ? "bg-indigo-50 text-indigo-800" : "text-slate-700 hover:bg-slate-100"}`}
            >
              {label}
            </NavLink>
          </li>
        ))}
      </ul>
    </nav>
  )
}

/** Moves focus to the main region when the path changes (not on the first load, where the browser decides). */
function useFocusOnNavigation() {
  const main = useRef<HTMLElement>(null)
  const { pathname } = useLocation()
  const shown = useRef(pathname)
  useEffect(() => {
    if (shown.current === pathname) return
    shown.current = pathname
    main.current?.focus()
  }, [pathname])
  return main
}

function SkipLink() {
  return (
    <a href="#main" className="sr-only rounded-md bg-white px-3 py-2 text-sm font-medium text-indigo-800 shadow focus:not-sr-only focus:fixed focus:left-3 focus:top-3 focus:z-50">
      Skip to content
    </a>
  )
}

function Brand({ projectId }: { readonly projectId?: string }) {
  return (
    <Link to={projectId ? `/p/${projectId}` : "/p"} className="text-lg font-semibold tracking-tight text-slate-900">
      mail<span className="text-indigo-600">stream</span>
    </Link>
  )
}

export function ProjectLayout() {
  const { projectId = "" } = useParams()
  const main = useFocusOnNavigation()
  const [menuOpen, setMenuOpen] = useState(false)
  const menuButton = useRef<HTMLButtonElement>(null)
  const { pathname } = useLocation()

  useEffect(() => setMenuOpen(false), [pathname])
  useEffect(() => {
    if (!menuOpen) return
    const onKey = (event: KeyboardEvent) => {
      if (event.key === "Escape") {
        setMenuOpen(false)
        menuButton.current?.focus()
      }
    }
    document.addEventListener("keydown", onKey)
    return () => document.removeEventListener("keydown", onKey)
  }, [menuOpen])

  return (
    <div className="min-h-screen lg:flex">
      <SkipLink />
      <aside className="hidden w-60 shrink-0 border-r border-slate-200 bg-white px-3 py-5 lg:block">
        <Sidebar projectId={projectId} />
      </aside>
      <header className="flex items-center justify-between border-b border-slate-200 bg-white px-4 py-3 lg:hidden">
        <Brand projectId={projectId} />
        <button
          ref={menuButton}
          type="button"
          className="btn-secondary"
          aria-expanded={menuOpen}
          aria-controls="mobile-menu"
          onClick={() => setMenuOpen((open) => !open)}
        >
          Menu
        </button>
      </header>
      {menuOpen && (
        <div className="fixed inset-0 z-40 lg:hidden">
          <div className="absolute inset-0 bg-slate-900/30" onClick={() => setMenuOpen(false)} aria-hidden="true" />
          <div id="mobile-menu" className="absolute inset-y-0 left-0 w-64 max-w-[80vw] overflow-y-auto bg-white px-3 py-5 shadow-xl">
            <Sidebar projectId={projectId} onNavigate={() => setMenuOpen(false)} />
          </div>
        </div>
      )}
      <main id="main" ref={main} tabIndex={-1} className="min-w-0 flex-1 px-4 py-6 outline-none sm:px-8 lg:py-8">
        <div className="mx-auto max-w-6xl">
          <VerifyEmailBanner />
          <LocalDeliveryBanner projectId={projectId} />
          <Suspense fallback={null}><DestinationsBanner projectId={projectId} /></Suspense>
          <LiveEventsProvider projectId={projectId}>
            <ErrorBoundary key={pathname}>
              <Outlet />
            </ErrorBoundary>
          </LiveEventsProvider>
        </div>
      </main>
    </div>
  )
}

function Sidebar({ projectId, onNavigate }: { readonly projectId: string; readonly onNavigate?: () => void }) {
  return (
    <>
      <div className="mb-4 px-3"><Brand projectId={projectId} /></div>
      <ProjectSwitcher projectId={projectId} />
      <Nav projectId={projectId} {...(onNavigate ? { onNavigate } : {})} />
      <div className="mt-8 border-t border-slate-200 px-3 pt-4"><AccountMenu /></div>
    </>
  )
}

/** The user's projects; choosing one opens its home page. */
function ProjectSwitcher({ projectId }: { readonly projectId: string }) {
  const id = useId()
  const projects = useProjects()
  const navigate = useNavigate()
  const list = projects.data ?? []
  return (
    <div className="mb-5 px-3">
      <label htmlFor={id} className="block text-xs font-medium uppercase tracking-wide text-slate-500">Project</label>
      <select id={id} className="input mt-1 py-1.5" value={projectId} onChange={(event) => void navigate(`/p/${event.target.value}`)}>
        {list.some((project) => project.id === projectId) ? null : <option value={projectId}>{projects.isPending ? "Loading…" : projectId}</option>}
        {list.map((project) => <option key={project.id} value={project.id}>{project.name}</option>)}
      </select>
      <Link to="/p" className="link mt-1 inline-block text-xs">All projects</Link>
    </div>
  )
}

/** Who is signed in, and signing out (which forgets everything cached under the session). */
function AccountMenu() {
  const me = useMe()
  const navigate = useNavigate()
  const queryClient = useQueryClient()
  const logout = useApiMutation((client, _: void) => client.auth.logout({}), {
    onSuccess: () => {
      forgetEverything(queryClient)
      void navigate("/signin")
    }
  })
  return (
    <div className="text-xs text-slate-500">
      {me.data && <p className="truncate" title={me.data.email} data-testid="signed-in-as">{me.data.email}</p>}
      <button type="button" className="link mt-1 text-xs" disabled={logout.isPending} onClick={() => logout.mutate()}>Sign out</button>
    </div>
  )
}

/** A reminder to verify one's email, only where the verification mail can reach the user (SMTP configured). */
function VerifyEmailBanner() {
  const me = useMe()
  const installation = useInstallation()
  if (!me.data || me.data.emailVerified || installation.data?.emailVerificationPossible !== true) return null
  return (
    <p className="mb-6 rounded-md border border-amber-200 bg-amber-50 px-4 py-2 text-sm text-amber-900">
      Your email address is not verified yet. <Link className="link" to="/verify-email">Verify it</Link>
    </p>
  )
}

/** The frame of the pages outside a project: sign-in and the other account pages, the project list. */
export function PlainLayout() {
  const main = useFocusOnNavigation()
  const { pathname } = useLocation()
  return (
    <div className="min-h-screen">
      <SkipLink />
      <header className="flex items-center justify-between gap-4 border-b border-slate-200 bg-white px-4 py-3 sm:px-8">
        <Brand />
        {!isAccountPage(pathname) && <div className="min-w-0 text-right"><AccountMenu /></div>}
      </header>
      <main id="main" ref={main} tabIndex={-1} className="px-4 py-8 outline-none sm:px-8">
        <div className="mx-auto max-w-2xl">
          {!isAccountPage(pathname) && <VerifyEmailBanner />}
          <ErrorBoundary key={pathname}>
            <Outlet />
          </ErrorBoundary>
        </div>
      </main>
    </div>
  )
}
