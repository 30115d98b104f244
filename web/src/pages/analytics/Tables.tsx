/** The analytics page's tables: top campaigns and events, deliverability by domain, the most clicked links, the opens heatmap. */
import { useState } from "react"
import { Link } from "react-router"
import { useApiQuery, useProjectId } from "../../api/hooks.ts"
import { cell, Section, Table, wideOnly } from "../../components/Page.tsx"
import { Empty, QueryView } from "../../components/States.tsx"
import { number, percent, query, type Range } from "./common.ts"

export function TopCampaigns({ range }: { readonly range: Range }) {
  const projectId = useProjectId()
  const [sort, setSort] = useState<"opened" | "sent" | "clicked" | "openRate" | "clickRate">("sent")
  const campaigns = useApiQuery(["analytics", "top-campaigns", range, sort], (client) => client.analytics.topCampaigns({ query: { ...query(range), limit: "10", sort } }))
  return (
    <Section title="Top campaigns">
      <label htmlFor="campaign-sort" className="sr-only">Rank campaigns by</label>
      <select id="campaign-sort" className="input mb-3 w-56" value={sort} onChange={(event) => setSort(event.target.value as typeof sort)}>
        <option value="sent">By sent</option>
        <option value="opened">By opens</option>
        <option value="clicked">By clicks</option>
        <option value="openRate">By open rate</option>
        <option value="clickRate">By click rate</option>
      </select>
      <QueryView query={campaigns} isEmpty={(result) => result.campaigns.length === 0} empty={<Empty title="No campaign mail in this range" />}>
        {(result) => (
          <Table label="Top campaigns" head={["Campaign", "Sent", "Open rate", "Click rate", ["Bounces", wideOnly]]}>
            {result.campaigns.map((campaign) => (
              <tr key={campaign.id}>
                <td className={cell}><Link to={`/p/${projectId}/campaigns/${campaign.id}`} className="link">{campaign.name}</Link></td>
                <td className={`${cell} tabular-nums`}>{number(campaign.sent)}</td>
                <td className={`${cell} tabular-nums`}>{percent(campaign.rates.openRate)}</td>
                <td className={`${cell} tabular-nums`}>{percent(campaign.rates.clickRate)}</td>
                <td className={`${cell} ${wideOnly} tabular-nums`}>{number(campaign.bounced)}</td>
              </tr>
            ))}
          </Table>
        )}
      </QueryView>
    </Section>
  )
}

export function TopEvents({ range }: { readonly range: Range }) {
  const events = useApiQuery(["analytics", "top-events", range], (client) => client.analytics.topEvents({ query: query(range) }))
  return (
    <Section title="Top events">
      <QueryView query={events} isEmpty={(result) => result.events.length === 0} empty={<Empty title="No events tracked in this range" />}>
        {(result) => (
          <Table label="Top events" head={["Event", "Count", "Previous period"]}>
            {result.events.map((event) => (
              <tr key={event.name}>
                <td className={`${cell} break-all font-mono text-xs`}>{event.name}</td>
                <td className={`${cell} tabular-nums`}>{number(event.count)}</td>
                <td className={`${cell} tabular-nums text-slate-600`}>{number(event.previousCount)}</td>
              </tr>
            ))}
          </Table>
        )}
      </QueryView>
    </Section>
  )
}

export function Deliverability({ range }: { readonly range: Range }) {
  const domains = useApiQuery(["analytics", "deliverability", range], (client) => client.analytics.deliverability({ query: query(range) }))
  return (
    <Section title="Deliverability by domain">
      <QueryView query={domains} isEmpty={(result) => result.domains.length === 0} empty={<Empty title="No mail sent in this range" />}>
        {(result) => (
          <Table label="Deliverability by domain" head={["Domain", "Sent", "Delivered", "Bounces", ["Complaints", wideOnly]]}>
            {result.domains.map((domain) => (
              <tr key={domain.domain}>
                <td className={`${cell} whitespace-nowrap`}>{domain.domain}</td>
                <td className={`${cell} tabular-nums`}>{number(domain.sent)}</td>
                <td className={`${cell} tabular-nums`}>{percent(domain.deliveryRate)}</td>
                <td className={`${cell} tabular-nums`} title={`${domain.hardBounces} hard, ${domain.softBounces} soft`}>{number(domain.bounced)}</td>
                <td className={`${cell} ${wideOnly} tabular-nums`}>{number(domain.complaints)}</td>
              </tr>
            ))}
          </Table>
        )}
      </QueryView>
    </Section>
  )
}

export function Links({ range }: { readonly range: Range }) {
  const links = useApiQuery(["analytics", "links", range], (client) => client.analytics.links({ query: query(range) }))
  return (
    <Section title="Most clicked links">
      <QueryView query={links} isEmpty={(result) => result.links.length === 0} empty={<Empty title="No clicks in this range" />}>
        {(result) => (
          <Table label="Most clicked links" head={["Link", "Clicks"]}>
            {result.links.map((link) => (
              <tr key={link.url}>
                <td className={`${cell} max-w-xs break-all font-mono text-xs`}>{link.url}</td>
                <td className={`${cell} tabular-nums`}>{number(link.clicks)}</td>
              </tr>
            ))}
          </Table>
        )}
      </QueryView>
    </Section>
  )
}

const WEEKDAYS = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]

export function Heatmap({ range }: { readonly range: Range }) {
  const [measure, setMeasure] = useState<"opens" | "clicks">("opens")
  const heatmap = useApiQuery(["analytics", "heatmap", range], (client) => client.analytics.heatmap({ query: query(range) }))
  return (
    <Section title="When mail is opened">
      <div role="radiogroup" aria-label="Measure" className="mb-3 inline-flex rounded-md border border-slate-300 bg-white p-0.5 text-sm">
        {(["opens", "clicks"] as const).map((value) => (
          <label key={value} className={`cursor-pointer rounded px-3 py-1 has-[:focus-visible]:outline-2 has-[:focus-visible]:outline-indigo-600 ${measure === value ? "bg-indigo-600 text-white" : "text-slate-700"}`}>
            <input type="radio" name="heatmap-measure" className="sr-only" checked={measure === value} onChange={() => setMeasure(value)} />
            {value === "opens" ? "First opens" : "First clicks"}
          </label>
        ))}
      </div>
      <QueryView query={heatmap}>
        {(result) => {
          const max = Math.max(1, ...result.cells.map((one) => one[measure]))
          const at = (weekday: number, hour: number) => result.cells.find((one) => one.weekday === weekday && one.hour === hour)?.[measure] ?? 0
          return (
            <div className="overflow-x-auto rounded-lg border border-slate-200 bg-white p-3">
              <table aria-label={`${measure === "opens" ? "First opens" : "First clicks"} by weekday and hour in ${result.tz}`} className="border-separate border-spacing-0.5 text-[10px] text-slate-500">
                <thead>
                  <tr>
                    <th scope="col"><span className="sr-only">Weekday</span></th>
                    {Array.from({ length: 24 }, (_, hour) => <th key={hour} scope="col" className="w-5 font-normal">{hour % 3 === 0 ? hour : ""}<span className="sr-only">{hour % 3 === 0 ? "" : hour}:00</span></th>)}
                  </tr>
                </thead>
                <tbody>
                  {WEEKDAYS.map((day, index) => (
                    <tr key={day}>
                      <th scope="row" className="pr-1 text-left font-medium">{day}</th>
                      {Array.from({ length: 24 }, (_, hour) => {
                        const count = at(index + 1, hour)
                        return (
                          <td key={hour} title={`${day} ${hour}:00: ${count}`} className="size-5 rounded-sm" style={{ backgroundColor: count === 0 ? "#f1f5f9" : `rgba(79, 70, 229, ${0.2 + 0.8 * (count / max)})` }}>
                            <span className="sr-only">{count}</span>
                          </td>
                        )
                      })}
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )
        }}
      </QueryView>
    </Section>
  )
}
