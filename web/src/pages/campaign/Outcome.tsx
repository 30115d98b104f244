/**
 * A campaign's progress and outcome: the live progress bar (queued, sent, delivered of the recipients),
 * its figures (opens, clicks, bounces, complaints, unsubscribes through its links) as numbers and a
 * chart, and the links campaign mail was clicked through since it went out.
 */
import type { UseQueryResult } from "@tanstack/react-query"
import { lazy, Suspense, useMemo } from "react"
import type { Campaign, CampaignStats as CampaignStatsSchema } from "../../../../src/http/api/campaigns.ts"
import type { ApiFailure } from "../../api/failure.ts"
import { useApiQuery } from "../../api/hooks.ts"
import { cell, Section, Table } from "../../components/Page.tsx"
import { Empty, Loading, QueryView } from "../../components/States.tsx"

// uPlot is loaded with the first chart, not with the app.
const BarChart = lazy(() => import("./UPlotChart.tsx"))

export type CampaignStats = typeof CampaignStatsSchema.Type

const percent = (rate: number) => `${(rate * 100).toFixed(1)} %`
const share = (part: number, whole: number) => (whole === 0 ? 0 : Math.min(100, (part / whole) * 100))

export function ProgressBar({ query }: { readonly query: UseQueryResult<CampaignStats, ApiFailure> }) {
  return (
    <QueryView query={query}>
      {(stats) => {
        const total = stats.totalRecipients
        const queued = stats.sent + stats.failed + stats.pending
        const handed = stats.sent + stats.failed
        const skipped = stats.skipped.unsubscribed + stats.skipped.suppressed + stats.skipped.deleted
        return (
          <div className="rounded-lg border border-slate-200 bg-white p-5">
            <div
              role="progressbar"
              aria-label="Sending progress"
              aria-valuemin={0}
              aria-valuemax={total}
              aria-valuenow={handed}
              aria-valuetext={`${stats.sent} of ${total} sent, ${stats.delivered} delivered`}
              className="flex h-4 w-full overflow-hidden rounded-full bg-slate-100"
            >
              <div className="bg-green-500 transition-[width]" style={{ width: `${share(stats.delivered, total)}%` }} />
              <div className="bg-indigo-500 transition-[width]" style={{ width: `${share(stats.sent - stats.delivered, total)}%` }} />
              <div className="bg-red-500 transition-[width]" style={{ width: `${share(stats.failed, total)}%` }} />
              <div className="bg-indigo-200 transition-[width]" style={{ width: `${share(stats.pending, total)}%` }} />
            </div>
            <dl className="mt-3 flex flex-wrap gap-x-6 gap-y-1 text-sm">
              {([
                ["Recipients", total.toLocaleString() + (stats.resolved ? "" : " so far")],
                ["Queued", queued.toLocaleString()],
                ["Sent", stats.sent.toLocaleString()],
                ["Delivered", stats.delivered.toLocaleString()],
                ...(stats.failed > 0 ? [["Failed", stats.failed.toLocaleString()] as const] : []),
                ...(skipped > 0 ? [["Skipped", `${skipped.toLocaleString()} (unsubscribed or suppressed)`] as const] : [])
              ] as const).map(([label, value]) => (
                <div key={label} className="flex gap-1.5">
                  <dt className="text-slate-500">{label}</dt>
                  <dd className="font-medium tabular-nums text-slate-900" data-testid={`progress-${label.toLowerCase()}`}>{value}</dd>
                </div>
              ))}
            </dl>
            {stats.error && <p className="mt-2 text-sm text-red-700">Stopped: {stats.error}</p>}
          </div>
        )
      }}
    </QueryView>
  )
}

/** Where a campaign's analytics range starts: when it began sending (at most 400 days back, the API's longest range). */
const rangeStart = (campaign: typeof Campaign.Type) => {
  const started = Date.parse(campaign.sentAt ?? campaign.scheduledFor ?? campaign.createdAt)
  const earliest = Date.now() - 399 * 86_400_000
  return new Date(Math.max(Math.min(started, Date.now() - 3_600_000), earliest)).toISOString()
}

export function Outcome({ campaign, stats }: {
  readonly campaign: typeof Campaign.Type
  readonly stats: UseQueryResult<CampaignStats, ApiFailure>
}) {
  const from = useMemo(() => rangeStart(campaign), [campaign])
  const links = useApiQuery(
    ["analytics", "links", "CAMPAIGN", from],
    // Refetched with the campaign's live updates (CampaignPage).
    (client) => client.analytics.links({ query: { from, stream: "CAMPAIGN", limit: "10" } })
  )
  return (
    <>
      <Section title="Outcome">
        <QueryView query={stats}>
          {(stats) => <Figures stats={stats} />}
        </QueryView>
      </Section>
      <Section title="Top links">
        <p className="-mt-2 mb-3 text-sm text-slate-500">Clicks through campaign mail since this campaign went out.</p>
        <QueryView query={links} isEmpty={(result) => result.links.length === 0} empty={<Empty title="No clicks yet" />}>
          {(result) => (
            <Table label="Top links" head={["Link", "Clicks"]}>
              {result.links.map((link) => (
                <tr key={link.url}>
                  <td className={`${cell} break-all font-mono text-xs`}>{link.url}</td>
                  <td className={`${cell} tabular-nums`}>{link.clicks.toLocaleString()}</td>
                </tr>
              ))}
            </Table>
          )}
        </QueryView>
      </Section>
    </>
  )
}

function Figures({ stats }: { readonly stats: CampaignStats }) {
  // [label, count, rate, the chart's short label]
  const figures: ReadonlyArray<readonly [string, number, string | undefined, string]> = [
    ["Sent", stats.sent, undefined, "Sent"],
    ["Delivered", stats.delivered, percent(stats.rates.delivery), "Deliv."],
    ["Opened", stats.opened, percent(stats.rates.open), "Opens"],
    ["Clicked", stats.clicked, percent(stats.rates.click), "Clicks"],
    ["Bounced", stats.bounced, percent(stats.rates.bounce), "Bounces"],
    ["Complaints", stats.complained, undefined, "Compl."],
    ["Unsubscribes", stats.unsubscribedCount, percent(stats.rates.unsubscribe), "Unsub."]
  ]
  return (
    <div className="grid min-w-0 gap-4 lg:grid-cols-[minmax(0,1fr)_minmax(0,1fr)]">
      <dl className="grid grid-cols-2 gap-3 sm:grid-cols-4 lg:grid-cols-3">
        {figures.map(([label, value, rate]) => (
          <div key={label} className="rounded-lg border border-slate-200 bg-white p-4">
            <dt className="text-sm text-slate-500">{label}</dt>
            <dd className="mt-1 text-lg font-semibold tabular-nums" data-testid={`figure-${label.toLowerCase()}`}>{value.toLocaleString()}</dd>
            {rate && <dd className="text-xs text-slate-500">{rate}</dd>}
          </div>
        ))}
      </dl>
      <div className="min-w-0 rounded-lg border border-slate-200 bg-white p-4">
        <Suspense fallback={<Loading label="Loading the chart…" />}>
          <BarChart labels={figures.map(([, , , short]) => short)} values={figures.map(([, value]) => value)} />
        </Suspense>
      </div>
    </div>
  )
}
