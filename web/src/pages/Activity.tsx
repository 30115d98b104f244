/**
 * Activity: what happened in the project, newest first, in cursor pages, filtered by type (the counts
 * from /activity/types); "N new" from /activity/recent-count, asked again on live updates, shows the newest on a click; and
 * what is due: scheduled campaigns, workflow delays and timeouts (/activity/upcoming).
 */
import { useQueryClient } from "@tanstack/react-query"
import { useEffect, useState } from "react"
import { Link, useSearchParams } from "react-router"
import { ACTIVITY_TYPES, type ActivityType } from "../../../src/domain/analytics/activityTypes.ts"
import { projectKey, useApiQuery, useProjectId } from "../api/hooks.ts"
import { anyChange, useLiveRefresh } from "../api/live.tsx"
import { Badge, formatDate, Page, Section } from "../components/Page.tsx"
import { Pager } from "../components/Pager.tsx"
import { Empty, QueryView } from "../components/States.tsx"
import { ActivityList, typeLabel } from "./activity/ActivityList.tsx"

const PAGE_SIZE = 25

const parseTypes = (raw: string | null): ReadonlyArray<ActivityType> =>
  (raw ?? "").split(",").filter((type): type is ActivityType => (ACTIVITY_TYPES as ReadonlyArray<string>).includes(type))

export function ActivityPage() {
  const projectId = useProjectId()
  const queryClient = useQueryClient()
  const [params, setParams] = useSearchParams()
  const types = parseTypes(params.get("types"))
  const typesParam = types.join(",")
  const [cursors, setCursors] = useState<ReadonlyArray<string>>([])
  const [cursor, setCursor] = useState<string | undefined>(undefined)
  useEffect(() => {
    setCursors([])
    setCursor(undefined)
  }, [typesParam])

  const feed = useApiQuery(
    ["activity", "feed", typesParam, cursor ?? null],
    (client) => client.activity.feed({ query: { limit: String(PAGE_SIZE), ...(typesParam ? { types: typesParam } : {}), ...(cursor ? { cursor } : {}) } })
  )
  const counts = useApiQuery(["activity", "types"], (client) => client.activity.types({ query: {} }))
  // New since the newest item shown on the first page (or since the page opened, while the feed is empty).
  const [openedAt] = useState(() => new Date().toISOString())
  const newest = cursor === undefined ? feed.data?.data[0]?.occurredAt : undefined
  const since = newest ?? openedAt
  const recent = useApiQuery(
    ["activity", "recent", since, typesParam],
    (client) => client.activity.recentCount({ query: { since, ...(typesParam ? { types: typesParam } : {}) } }),
    { enabled: feed.isSuccess && cursor === undefined }
  )
  // New items are counted, not slid under the reader's eyes: the list moves when they ask for it.
  useLiveRefresh(anyChange, [["activity", "recent"], ["activity", "types"], ["activity", "upcoming"]])
  const fresh = recent.data?.count ?? 0

  const toggle = (type: ActivityType) => {
    const next = types.includes(type) ? types.filter((candidate) => candidate !== type) : [...types, type]
    setParams((current) => {
      const updated = new URLSearchParams(current)
      if (next.length > 0) updated.set("types", next.join(","))
      else updated.delete("types")
      return updated
    }, { replace: true })
  }
  const showNew = () => {
    setCursors([])
    setCursor(undefined)
    void queryClient.invalidateQueries({ queryKey: projectKey(projectId, ["activity"]) })
  }

  return (
    <Page title="Activity">
      <div className="grid grid-cols-1 gap-8 lg:grid-cols-[minmax(0,1fr)_20rem]">
        <div className="min-w-0">
          <fieldset className="mb-4">
            <legend className="mb-2 text-sm font-medium text-slate-700">Types</legend>
            {counts.isError
              ? <p className="text-sm text-red-800">Types could not be loaded: {counts.error.message}{counts.error.requestId ? ` (request id ${counts.error.requestId})` : ""}</p>
              : (
                <div className="flex flex-wrap gap-2">
                  {/* Types that have happened (and any chosen): the rest would be a wall of zeros. */}
                  {(counts.data?.types ?? []).filter(({ type, count }) => count > 0 || types.includes(type)).map(({ type, count }) => (
                    <label key={type} className={`inline-flex cursor-pointer items-center gap-1.5 rounded-full border px-3 py-1 text-xs font-medium has-[:focus-visible]:outline-2 has-[:focus-visible]:outline-indigo-600 ${types.includes(type) ? "border-indigo-600 bg-indigo-50 text-indigo-800" : "border-slate-300 bg-white text-slate-700"}`}>
                      <input type="checkbox" className="sr-only" checked={types.includes(type)} onChange={() => toggle(type)} />
                      {typeLabel(type)} <span className="tabular-nums text-slate-500">{count.toLocaleString()}</span>
                    </label>
                  ))}
                  {types.length > 0 && <button type="button" className="link text-xs" onClick={() => setParams({}, { replace: true })}>Show every type</button>}
                </div>
              )}
          </fieldset>
          <div aria-live="polite">
            {fresh > 0 && (
              <button type="button" data-testid="new-activity" onClick={showNew} className="mb-3 w-full rounded-md border border-indigo-200 bg-indigo-50 px-4 py-2 text-sm font-medium text-indigo-800 hover:bg-indigo-100">
                {fresh.toLocaleString()} new {fresh === 1 ? "item" : "items"}: show
              </button>
            )}
          </div>
          <QueryView
            query={feed}
            isEmpty={(page) => page.data.length === 0}
            empty={<Empty title={types.length > 0 ? "Nothing of these types yet" : "No activity yet"}>Mail sent, events tracked and contacts added show here as they happen.</Empty>}
          >
            {(page) => (
              <>
                <ActivityList label="Activity feed" items={page.data} />
                <Pager
                  label={`Page ${cursors.length + 1}`}
                  hasPrevious={cursors.length > 0}
                  hasNext={page.hasMore && page.cursor !== null}
                  onPrevious={() => {
                    setCursor(cursors.length > 1 ? cursors[cursors.length - 2] : undefined)
                    setCursors(cursors.slice(0, -1))
                  }}
                  onNext={() => {
                    if (page.cursor === null) return
                    setCursors([...cursors, page.cursor])
                    setCursor(page.cursor)
                  }}
                />
              </>
            )}
          </QueryView>
        </div>
        <Upcoming />
      </div>
    </Page>
  )
}

const UPCOMING_LABELS = { "campaign.scheduled": "Campaign", "workflow.delay": "Delay ends", "workflow.timeout": "Wait times out" } as const

function Upcoming() {
  const projectId = useProjectId()
  const [hours, setHours] = useState(24)
  const upcoming = useApiQuery(["activity", "upcoming", hours], (client) => client.activity.upcoming({ query: { hours: String(hours), limit: "50" } }), { refetchInterval: 30_000 })
  return (
    <Section title="Upcoming">
      <label htmlFor="upcoming-hours" className="block text-sm font-medium text-slate-700">Within</label>
      <select id="upcoming-hours" className="input mb-3 mt-1" value={hours} onChange={(event) => setHours(Number(event.target.value))}>
        <option value={1}>the next hour</option>
        <option value={24}>the next 24 hours</option>
        <option value={168}>the next 7 days</option>
        <option value={720}>the next 30 days</option>
      </select>
      <QueryView query={upcoming} isEmpty={(result) => result.items.length === 0} empty={<Empty title="Nothing due" />}>
        {(result) => (
          <ol aria-label="Upcoming" className="divide-y divide-slate-100 rounded-lg border border-slate-200 bg-white text-sm">
            {result.items.map((item, index) => (
              <li key={`${item.type}:${item.executionId ?? item.campaign?.id ?? index}`} className="px-4 py-3">
                <p className="flex flex-wrap items-center justify-between gap-2">
                  <Badge tone="indigo">{UPCOMING_LABELS[item.type]}</Badge>
                  <time dateTime={item.dueAt} className="text-xs text-slate-500">{formatDate(item.dueAt)}</time>
                </p>
                <p className="mt-1 flex flex-wrap gap-x-2 text-slate-800">
                  {item.campaign && <Link to={`/p/${projectId}/campaigns/${item.campaign.id}`} className="link">{item.campaign.name}</Link>}
                  {item.workflow && <Link to={`/p/${projectId}/workflows/${item.workflow.id}${item.executionId ? `?execution=${item.executionId}` : ""}`} className="link">{item.workflow.name}</Link>}
                  {item.step && <span className="text-slate-600">{item.step.name}</span>}
                  {item.contact && <Link to={`/p/${projectId}/contacts/${item.contact.id}`} className="link break-all">{item.contact.email ?? item.contact.id}</Link>}
                </p>
              </li>
            ))}
          </ol>
        )}
      </QueryView>
    </Section>
  )
}
