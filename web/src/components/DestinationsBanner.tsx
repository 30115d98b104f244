/**
 * On every project page (for those who manage destinations): an event destination the service disabled
 * after failing again and again, so the owner notices and fixes it. Not on the destination pages, which
 * say it themselves.
 */
import { Link, useLocation } from "react-router"
import { useApiQuery } from "../api/hooks.ts"
import { useCurrentProject } from "../api/session.ts"

export function DestinationsBanner({ projectId }: { readonly projectId: string }) {
  const { pathname } = useLocation()
  const manages = useCurrentProject().can("manage")
  const list = useApiQuery(["destinations", "list"], (client) => client.destinations.list({}), { enabled: manages, refetchInterval: 60_000 })
  const disabled = (list.data?.data ?? []).filter((destination) => !destination.enabled && destination.disabledReason === "failures")
  const base = `/p/${projectId}/destinations`
  if (disabled.length === 0 || pathname.startsWith(base)) return null
  const [first] = disabled
  return (
    <p role="alert" data-testid="destinations-disabled" className="mb-6 rounded-md border border-red-200 bg-red-50 px-4 py-2 text-sm text-red-900">
      <strong className="font-semibold">
        {disabled.length === 1 ? "An event destination was disabled" : `${disabled.length} event destinations were disabled`}
      </strong>{" "}
      after its deliveries failed again and again: <span className="break-all">{first!.url}</span>
      {disabled.length > 1 ? " and the others receive" : " receives"} nothing until re-enabled.{" "}
      <Link className="link" to={disabled.length === 1 ? `${base}/${first!.id}` : base}>
        {disabled.length === 1 ? "Open it" : "See destinations"}
      </Link>
    </p>
  )
}
