/**
 * The home page's last 14 days: mail sent, delivered, opened and clicked, and contacts added and
 * unsubscribed, per day in the browser's zone, as the Analytics page draws them (uPlot comes with this
 * module, loaded after the page's counts).
 */
import { useMemo, useState } from "react"
import { Link } from "react-router"
import { useApiQuery, useProjectId } from "../../api/hooks.ts"
import { QueryView } from "../../components/States.tsx"
import { LineChart } from "../analytics/Chart.tsx"
import { addDays, isTimeZone, localDay } from "../../../../src/domain/analytics/range.ts"
import { browserZone, rangeOf } from "../analytics/range.ts"

const DAYS = 14

export default function HomeCharts() {
  const projectId = useProjectId()
  const [range] = useState(() => {
    const tz = isTimeZone(browserZone()) ? browserZone() : "UTC"
    const last = localDay(tz, Date.now())
    return { ...rangeOf({ first: addDays(last, 1 - DAYS), last }, tz), tz, stream: "ALL" as const }
  })
  const mail = useApiQuery(["analytics", "timeseries", range], (client) => client.analytics.timeseries({ query: range }), { refetchInterval: 60_000 })
  const audience = useApiQuery(["analytics", "audience", range], (client) => client.analytics.audience({ query: range }), { refetchInterval: 60_000 })
  const mailSeries = useMemo(() => mail.data && {
    times: mail.data.buckets.map((bucket) => Date.parse(bucket.start)),
    series: [
      { label: "Sent", colour: "#4f46e5", values: mail.data.buckets.map((bucket) => bucket.sent) },
      { label: "Delivered", colour: "#16a34a", values: mail.data.buckets.map((bucket) => bucket.delivered) },
      { label: "Opened", colour: "#0891b2", values: mail.data.buckets.map((bucket) => bucket.opened) },
      { label: "Clicked", colour: "#d97706", values: mail.data.buckets.map((bucket) => bucket.clicked) }
    ]
  }, [mail.data])
  const contactSeries = useMemo(() => audience.data && {
    times: audience.data.buckets.map((bucket) => Date.parse(bucket.start)),
    series: [
      { label: "New", colour: "#16a34a", values: audience.data.buckets.map((bucket) => bucket.new) },
      { label: "Unsubscribed", colour: "#dc2626", values: audience.data.buckets.map((bucket) => bucket.unsubscribed) }
    ]
  }, [audience.data])
  const total = (values: ReadonlyArray<number>) => values.reduce((sum, value) => sum + value, 0).toLocaleString()
  return (
    <div className="grid grid-cols-1 gap-4 xl:grid-cols-2">
      <figure className="min-w-0 rounded-lg border border-slate-200 bg-white p-4">
        <figcaption className="mb-2 text-sm font-medium text-slate-700">Mail, last {DAYS} days</figcaption>
        <QueryView query={mail}>
          {(data) => (
            <>
              {mailSeries && <LineChart label={`Mail per day in ${data.tz}`} times={mailSeries.times} series={mailSeries.series} tz={data.tz} hourly={false} />}
              <p className="mt-2 text-sm text-slate-600" data-testid="home-mail-totals">
                {mailSeries?.series.map((one) => `${total(one.values)} ${one.label.toLowerCase()}`).join(" · ")}
              </p>
            </>
          )}
        </QueryView>
      </figure>
      <figure className="min-w-0 rounded-lg border border-slate-200 bg-white p-4">
        <figcaption className="mb-2 text-sm font-medium text-slate-700">Contacts, last {DAYS} days</figcaption>
        <QueryView query={audience}>
          {(data) => (
            <>
              {contactSeries && <LineChart label={`Contacts per day in ${data.tz}`} times={contactSeries.times} series={contactSeries.series} tz={data.tz} hourly={false} />}
              <p className="mt-2 text-sm text-slate-600" data-testid="home-contact-totals">
                {contactSeries?.series.map((one) => `${total(one.values)} ${one.label.toLowerCase()}`).join(" · ")}
              </p>
            </>
          )}
        </QueryView>
      </figure>
      <p className="text-sm xl:col-span-2"><Link to={`/p/${projectId}/analytics`} className="link">More in Analytics</Link></p>
    </div>
  )
}
