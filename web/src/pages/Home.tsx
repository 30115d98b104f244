/**
 * The project at a glance: what setup still lacks, live counts of what it holds (each linking to its
 * page), mail and contacts over the last days as charts (home/HomeCharts.tsx, with uPlot, loaded on
 * demand) and the latest activity.
 */
import type { UseQueryResult } from "@tanstack/react-query"
import { lazy, Suspense } from "react"
import { Link } from "react-router"
import type { ApiFailure } from "../api/failure.ts"
import { useApiQuery, useProjectId } from "../api/hooks.ts"
import { anyChange, useLiveRefresh } from "../api/live.tsx"
import { useCurrentProject } from "../api/session.ts"
import { Page, Section } from "../components/Page.tsx"
import { Empty, ErrorState, Loading, QueryView } from "../components/States.tsx"
import { ActivityList } from "./activity/ActivityList.tsx"
import { SetupChecklist } from "./SetupChecklist.tsx"

const HomeCharts = lazy(() => import("./home/HomeCharts.tsx"))

function Count({ label, to, query }: { readonly label: string; readonly to: string; readonly query: UseQueryResult<string, ApiFailure> }) {
  return (
    <Link to={to} className="block rounded-lg border border-slate-200 bg-white p-5 shadow-sm hover:border-indigo-300">
      <p className="text-sm font-medium text-slate-500">{label}</p>
      <p className="mt-2 text-3xl font-semibold tabular-nums text-slate-900" data-testid={`count-${label.toLowerCase()}`}>
        {query.isPending ? <span className="text-slate-300" aria-label="loading">…</span> : query.isError ? "—" : query.data}
      </p>
    </Link>
  )
}

export function HomePage() {
  const projectId = useProjectId() ?? ""
  const base = `/p/${projectId}`
  const contacts = useApiQuery(["contacts", "count"], (client) => client.contacts.list({ query: { limit: "1" } }))
  const templates = useApiQuery(["templates", "count"], (client) => client.templates.list({ query: { pageSize: "1" } }))
  const segments = useApiQuery(["segments", "list"], (client) => client.segments.list({}))
  const campaigns = useApiQuery(["campaigns", "count"], (client) => client.campaigns.list({ query: { pageSize: "1" } }))
  const workflows = useApiQuery(["workflows", "list"], (client) => client.workflows.list({}))
  const events = useApiQuery(["events", "names"], (client) => client.events.names({}))
  // The counts the project's data moves follow it live (templates, workflows and domains change only here).
  useLiveRefresh(anyChange, [["contacts", "count"], ["segments", "list"], ["campaigns", "count"], ["events", "names"], ["setup-state"], ["activity", "feed", "home"]])
  // Domains are an ADMIN's: a MEMBER's home page leaves them out rather than showing a 403.
  const managesDomains = useCurrentProject().can("manage")
  const domains = useApiQuery(["domains", "list"], (client) => client.domains.list({ params: { projectId } }), { enabled: managesDomains })

  const show = <A,>(query: UseQueryResult<A, ApiFailure>, count: (data: A) => string) =>
    ({ ...query, data: query.data === undefined ? undefined : count(query.data) }) as UseQueryResult<string, ApiFailure>
  const firstError = [contacts, templates, segments, campaigns, workflows, events, domains].find((query) => query.isError)?.error

  return (
    <Page title="Home">
      <SetupChecklist />
      {firstError && <div className="mb-6"><ErrorState failure={firstError} /></div>}
      <div className="grid grid-cols-1 gap-4 sm:grid-cols-2 xl:grid-cols-4">
        <Count label="Contacts" to={`${base}/contacts`} query={show(contacts, (page) => page.total.toLocaleString())} />
        <Count label="Events" to={`${base}/events`} query={show(events, (result) => result.names.reduce((sum, name) => sum + name.count, 0).toLocaleString())} />
        <Count label="Templates" to={`${base}/templates`} query={show(templates, (page) => page.total.toLocaleString())} />
        <Count label="Segments" to={`${base}/segments`} query={show(segments, (list) => list.length.toLocaleString())} />
        <Count label="Campaigns" to={`${base}/campaigns`} query={show(campaigns, (page) => page.total.toLocaleString())} />
        <Count label="Workflows" to={`${base}/workflows`} query={show(workflows, (list) => list.length.toLocaleString())} />
        {managesDomains && (
          <Count
            label="Domains"
            to={`${base}/domains`}
            query={show(domains, (list) => `${list.filter((domain) => domain.verified).length} / ${list.length}`)}
          />
        )}
      </div>
      <p className="mt-4 text-sm text-slate-500">Domains count verified / all. Counts update as contacts, events and mail arrive.</p>
      <div className="mt-8">
        <Section title="Last two weeks">
          <Suspense fallback={<Loading />}><HomeCharts /></Suspense>
        </Section>
        <RecentActivity />
      </div>
    </Page>
  )
}

function RecentActivity() {
  const projectId = useProjectId()
  const feed = useApiQuery(["activity", "feed", "home"], (client) => client.activity.feed({ query: { limit: "8" } }))
  return (
    <Section title="Recent activity">
      <QueryView
        query={feed}
        isEmpty={(page) => page.data.length === 0}
        empty={<Empty title="No activity yet">Mail sent, events tracked and contacts added show here as they happen.</Empty>}
      >
        {(page) => <ActivityList label="Recent activity" items={page.data} />}
      </QueryView>
      <p className="mt-2 text-sm"><Link to={`/p/${projectId}/activity`} className="link">All activity</Link></p>
    </Section>
  )
}
