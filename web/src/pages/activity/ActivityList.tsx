/** Activity items as a list (the Activity page's feed, the home page's recent activity): type, what, when. */
import type { ReactNode } from "react"
import { Link } from "react-router"
import type { ActivityItem } from "../../../../src/http/api/activity.ts"
import { useProjectId } from "../../api/hooks.ts"
import { Badge, formatDate } from "../../components/Page.tsx"

const TONES: Partial<Record<string, "green" | "amber" | "red" | "indigo">> = {
  "email.delivered": "green",
  "email.opened": "indigo",
  "email.clicked": "indigo",
  "email.bounced": "red",
  "email.complained": "red",
  "email.failed": "red",
  "email.suppressed": "amber",
  "contact.unsubscribed": "amber",
  "workflow.failed": "red",
  "campaign.cancelled": "amber"
}

export const typeLabel = (type: string) => (type === "event" ? "custom event" : type.replace(".", " "))

type Item = typeof ActivityItem.Type

function ActivityText({ item, projectId }: { readonly item: Item; readonly projectId: string }) {
  const parts: Array<ReactNode> = []
  if (item.event) parts.push(<span key="event" className="font-mono">{item.event}</span>)
  if (item.contact) {
    parts.push(<Link key="contact" to={`/p/${projectId}/contacts/${item.contact.id}`} className="link break-all">{item.contact.email ?? item.contact.id}</Link>)
  }
  if (item.subject) parts.push(<span key="subject" className="text-slate-600">“{item.subject}”</span>)
  if (item.campaign) parts.push(<Link key="campaign" to={`/p/${projectId}/campaigns/${item.campaign.id}`} className="link">{item.campaign.name ?? "campaign"}</Link>)
  if (item.workflow) parts.push(<Link key="workflow" to={`/p/${projectId}/workflows/${item.workflow.id}`} className="link">{item.workflow.name ?? "workflow"}</Link>)
  const detail = typeof item.data.link === "string" ? item.data.link : typeof item.data.error === "string" ? item.data.error : typeof item.data.bounceType === "string" ? item.data.bounceType : undefined
  if (detail) parts.push(<span key="detail" className="break-all text-slate-600">{detail}</span>)
  return <p className="flex flex-wrap gap-x-2 gap-y-0.5">{parts.length > 0 ? parts : <span className="text-slate-500">—</span>}</p>
}

export function ActivityList({ label, items }: { readonly label: string; readonly items: ReadonlyArray<Item> }) {
  const projectId = useProjectId() ?? ""
  return (
    <ol aria-label={label} className="divide-y divide-slate-100 rounded-lg border border-slate-200 bg-white">
      {items.map((item) => (
        <li key={`${item.type}:${item.id}`} className="flex flex-col gap-1 px-4 py-3 sm:flex-row sm:items-start sm:gap-4">
          <div className="w-36 shrink-0"><Badge tone={TONES[item.type] ?? "slate"}>{typeLabel(item.type)}</Badge></div>
          <div className="min-w-0 flex-1 text-sm text-slate-800">
            <ActivityText item={item} projectId={projectId} />
          </div>
          <time dateTime={item.occurredAt} className="shrink-0 whitespace-nowrap text-xs text-slate-500">{formatDate(item.occurredAt)}</time>
        </li>
      ))}
    </ol>
  )
}
