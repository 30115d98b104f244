/** The event names the project has seen, with how often and when last. */
import { useApiQuery } from "../api/hooks.ts"
import { cell, formatDate, Page, Table } from "../components/Page.tsx"
import { Empty, QueryView } from "../components/States.tsx"

export function EventsPage() {
  const query = useApiQuery(["events", "names"], (client) => client.events.names({}))
  return (
    <Page title="Events">
      <QueryView
        query={query}
        isEmpty={(result) => result.names.length === 0}
        empty={<Empty title="No events yet">Track one with <code>POST /v1/track</code>.</Empty>}
      >
        {(result) => (
          <Table label="Event names" head={["Name", "Count", "Last seen"]}>
            {result.names.map((name) => (
              <tr key={name.name}>
                <td className={`${cell} break-all font-mono`}>{name.name}</td>
                <td className={`${cell} tabular-nums`}>{name.count.toLocaleString()}</td>
                <td className={`${cell} whitespace-nowrap text-slate-600`}>{formatDate(name.lastSeenAt)}</td>
              </tr>
            ))}
          </Table>
        )}
      </QueryView>
    </Page>
  )
}
