/**
 * Analytics: the headline numbers with their change against the previous period, the timeseries as
 * charts (uPlot), top campaigns and events, deliverability by recipient domain, the most clicked links
 * and the opens heatmap; for a range of local days, in a time zone, for one stream of mail. The choices
 * live in the URL.
 */
import { useMemo, useState } from "react"
import { useSearchParams } from "react-router"
import { addDays, isTimeZone, localDay, STREAMS, type Stream } from "../../../src/domain/analytics/range.ts"
import { useApiQuery } from "../api/hooks.ts"
import { cell, Page, Section, Table, wideOnly } from "../components/Page.tsx"
import { QueryView } from "../components/States.tsx"
import { LineChart, type Series } from "./analytics/Chart.tsx"
import { number, percent, query, type Range } from "./analytics/common.ts"
import { browserZone, daysOf, type Preset, PRESETS, rangeOf, zones } from "./analytics/range.ts"
import { Deliverability, Heatmap, Links, TopCampaigns, TopEvents } from "./analytics/Tables.tsx"

const STREAM_LABELS: Record<Stream, string> = { ALL: "All mail", TRANSACTIONAL: "Transactional", CAMPAIGN: "Campaigns", WORKFLOW: "Workflows" }

export function AnalyticsPage() {
  const [params, setParams] = useSearchParams()
  const preset = (PRESETS.find(([value]) => value === params.get("range"))?.[0] ?? "30d") as Preset
  const tz = params.get("tz") ?? browserZone()
  const stream = (STREAMS as ReadonlyArray<string>).includes(params.get("stream") ?? "") ? params.get("stream") as Stream : "ALL"
  const [now] = useState(() => new Date())
  // Days are counted in the zone when the browser knows it; the API answers for the zone asked (and names a bad one).
  const dayZone = isTimeZone(tz) ? tz : "UTC"
  const today = localDay(dayZone, now.getTime())
  const custom = { from: params.get("from") ?? addDays(today, -6), to: params.get("to") ?? today }
  const days = daysOf(preset, dayZone, now, custom)
  const range: Range = { ...rangeOf(days, dayZone), tz, stream }
  const set = (patch: Record<string, string>) =>
    setParams((current) => {
      const next = new URLSearchParams(current)
      for (const [key, value] of Object.entries(patch)) next.set(key, value)
      return next
    }, { replace: true })
  const zoneList = useMemo(() => zones(tz), [tz])

  return (
    <Page title="Analytics">
      <form aria-label="Analytics choices" className="mb-6 grid gap-3 sm:grid-cols-2 lg:grid-cols-4" onSubmit={(event) => event.preventDefault()}>
        <div>
          <label htmlFor="analytics-range" className="block text-sm font-medium text-slate-700">Range</label>
          <select id="analytics-range" className="input mt-1" value={preset} onChange={(event) => set({ range: event.target.value })}>
            {PRESETS.map(([value, label]) => <option key={value} value={value}>{label}</option>)}
          </select>
        </div>
        <div>
          <label htmlFor="analytics-tz" className="block text-sm font-medium text-slate-700">Time zone</label>
          <select id="analytics-tz" className="input mt-1" value={tz} onChange={(event) => set({ tz: event.target.value })}>
            {zoneList.map((zone) => <option key={zone} value={zone}>{zone}</option>)}
          </select>
        </div>
        <div>
          <label htmlFor="analytics-stream" className="block text-sm font-medium text-slate-700">Stream</label>
          <select id="analytics-stream" className="input mt-1" value={stream} onChange={(event) => set({ stream: event.target.value })}>
            {STREAMS.map((value) => <option key={value} value={value}>{STREAM_LABELS[value]}</option>)}
          </select>
        </div>
        {preset === "custom" && (
          <div className="grid grid-cols-2 gap-2">
            <div>
              <label htmlFor="analytics-from" className="block text-sm font-medium text-slate-700">From</label>
              <input id="analytics-from" type="date" className="input mt-1" value={custom.from} max={today} onChange={(event) => event.target.value && set({ from: event.target.value })} />
            </div>
            <div>
              <label htmlFor="analytics-to" className="block text-sm font-medium text-slate-700">To</label>
              <input id="analytics-to" type="date" className="input mt-1" value={custom.to} onChange={(event) => event.target.value && set({ to: event.target.value })} />
            </div>
          </div>
        )}
      </form>
      <p className="-mt-3 mb-6 text-sm text-slate-600" data-testid="range-label">
        {days.first === days.last ? days.first : `${days.first} to ${days.last}`} in {tz}, compared with the {days.first === days.last ? "day" : "period"} before
      </p>
      <Overview range={range} />
      <Timeseries range={range} />
      <div className="grid grid-cols-1 gap-x-8 xl:grid-cols-2">
        <TopCampaigns range={range} />
        <TopEvents range={range} />
        <Deliverability range={range} />
        <Links range={range} />
      </div>
      <Heatmap range={range} />
    </Page>
  )
}

const OVERVIEW = [
  ["sent", "Sent"],
  ["delivered", "Delivered"],
  ["opened", "Opened"],
  ["clicked", "Clicked"],
  ["bounced", "Bounced"],
  ["complained", "Complaints"],
  ["unsubscribed", "Unsubscribed"],
  ["newContacts", "New contacts"]
] as const
/** Metrics where more is worse: their rises are shown red. */
const WORSE_WHEN_UP: ReadonlySet<string> = new Set(["bounced", "complained", "unsubscribed"])

function Change({ metric, change }: { readonly metric: string; readonly change: number | null | undefined }) {
  if (change === null || change === undefined) return <span className="text-xs text-slate-500">no previous</span>
  if (change === 0) return <span className="text-xs text-slate-500">no change</span>
  const good = change > 0 !== WORSE_WHEN_UP.has(metric)
  return (
    <span className={`text-xs font-medium ${good ? "text-green-700" : "text-red-700"}`}>
      {change > 0 ? "▲" : "▼"} {percent(Math.abs(change))} <span className="sr-only">against the previous period</span>
    </span>
  )
}

function Overview({ range }: { readonly range: Range }) {
  const overview = useApiQuery(["analytics", "overview", range], (client) => client.analytics.overview({ query: query(range) }))
  return (
    <Section title="Overview">
      <QueryView query={overview}>
        {(result) => (
          <>
            <dl className="grid grid-cols-2 gap-3 sm:grid-cols-4">
              {OVERVIEW.map(([metric, label]) => (
                <div key={metric} className="rounded-lg border border-slate-200 bg-white p-4" data-testid={`overview-${metric}`}>
                  <dt className="text-sm text-slate-600">{label}</dt>
                  <dd className="mt-1 text-2xl font-semibold tabular-nums text-slate-900">{number(result.current[metric])}</dd>
                  <dd className="mt-0.5"><Change metric={metric} change={result.change[metric]} /></dd>
                </div>
              ))}
            </dl>
            <p className="mt-3 flex flex-wrap gap-x-5 gap-y-1 text-sm text-slate-700">
              <span>Delivery rate <strong className="tabular-nums">{percent(result.rates.deliveryRate)}</strong></span>
              <span>Open rate <strong className="tabular-nums">{percent(result.rates.openRate)}</strong></span>
              <span>Click rate <strong className="tabular-nums">{percent(result.rates.clickRate)}</strong></span>
              <span>Bounce rate <strong className="tabular-nums">{percent(result.rates.bounceRate)}</strong></span>
              <span>Complaint rate <strong className="tabular-nums">{percent(result.rates.complaintRate)}</strong></span>
            </p>
          </>
        )}
      </QueryView>
    </Section>
  )
}

const METRIC_SERIES = [
  ["sent", "Sent", "#4f46e5"],
  ["delivered", "Delivered", "#16a34a"],
  ["opened", "Opened", "#0891b2"],
  ["clicked", "Clicked", "#d97706"],
  ["bounced", "Bounced", "#dc2626"]
] as const

function Timeseries({ range }: { readonly range: Range }) {
  const timeseries = useApiQuery(["analytics", "timeseries", range], (client) => client.analytics.timeseries({ query: query(range) }))
  const audience = useApiQuery(["analytics", "audience", range], (client) => client.analytics.audience({ query: query(range) }))
  const mail = useMemo(() => {
    const data = timeseries.data
    if (!data) return undefined
    const series: Array<Series> = METRIC_SERIES.map(([metric, label, colour]) => ({ label, colour, values: data.buckets.map((bucket) => bucket[metric]) }))
    series.push({ label: "Sent, previous period", colour: "#94a3b8", dashed: true, values: data.previous.buckets.map((bucket) => bucket.sent) })
    return { times: data.buckets.map((bucket) => Date.parse(bucket.start)), series, hourly: data.granularity === "hour" }
  }, [timeseries.data])
  const contacts = useMemo(() => {
    const data = audience.data
    if (!data) return undefined
    return {
      times: data.buckets.map((bucket) => Date.parse(bucket.start)),
      series: [
        { label: "New", colour: "#16a34a", values: data.buckets.map((bucket) => bucket.new) },
        { label: "Unsubscribed", colour: "#dc2626", values: data.buckets.map((bucket) => bucket.unsubscribed) }
      ],
      hourly: data.granularity === "hour"
    }
  }, [audience.data])
  return (
    <>
      <Section title="Mail over time">
        <QueryView query={timeseries}>
          {(data) => (
            <div className="rounded-lg border border-slate-200 bg-white p-3">
              {mail && <LineChart label={`Mail per ${data.granularity} in ${data.tz}`} times={mail.times} series={mail.series} tz={data.tz} hourly={mail.hourly} />}
              <details className="mt-2">
                <summary className="cursor-pointer text-sm font-medium text-slate-700">Figures per {data.granularity}</summary>
                <div className="mt-2">
                  <Table label="Mail per bucket" head={[data.granularity === "hour" ? "Hour" : "Day", "Sent", "Delivered", "Opened", "Clicked", ["Bounced", wideOnly]]}>
                    {data.buckets.map((bucket) => (
                      <tr key={bucket.start}>
                        <td className={`${cell} whitespace-nowrap font-mono text-xs`}>{bucket.local}</td>
                        <td className={`${cell} tabular-nums`}>{number(bucket.sent)}</td>
                        <td className={`${cell} tabular-nums`}>{number(bucket.delivered)}</td>
                        <td className={`${cell} tabular-nums`}>{number(bucket.opened)}</td>
                        <td className={`${cell} tabular-nums`}>{number(bucket.clicked)}</td>
                        <td className={`${cell} ${wideOnly} tabular-nums`}>{number(bucket.bounced)}</td>
                      </tr>
                    ))}
                  </Table>
                </div>
              </details>
            </div>
          )}
        </QueryView>
      </Section>
      <Section title="Contacts over time">
        <QueryView query={audience}>
          {(data) => (
            <div className="rounded-lg border border-slate-200 bg-white p-3">
              {contacts && <LineChart label={`New and unsubscribed contacts per ${data.granularity} in ${data.tz}`} times={contacts.times} series={contacts.series} tz={data.tz} hourly={contacts.hourly} />}
              <p className="mt-2 text-sm text-slate-600">{number(data.buckets.at(-1)?.total ?? 0)} contacts at the end of the range.</p>
            </div>
          )}
        </QueryView>
      </Section>
    </>
  )
}
