/** This month's emails per category against the monthly caps, and the caps themselves (every member sees them; ADMINs set them). */
import { useEffect, useState } from "react"
import { useSearchParams } from "react-router"
import { useApiMutation, useApiQuery, useProjectId } from "../../api/hooks.ts"
import { useCurrentProject } from "../../api/session.ts"
import { Card, MutationError, Notice } from "../../components/Form.tsx"
import { cell, Table } from "../../components/Page.tsx"
import { QueryView } from "../../components/States.tsx"

const CATEGORIES = [
  ["transactional", "Transactional"],
  ["campaigns", "Campaigns"],
  ["workflows", "Workflows"],
  ["inbound", "Inbound"]
] as const
type Category = typeof CATEGORIES[number][0]
type Limits = Record<Category, number | null>

/** "November 2026": the billing period is a UTC calendar month, whatever the browser's time zone. */
const monthOf = (iso: string) => new Date(iso).toLocaleDateString(undefined, { month: "long", year: "numeric", timeZone: "UTC" })

const LIMITS = ["billing", "limits"]
const CONSUMPTION = ["billing", "consumption"]

export function BillingPage() {
  const projectId = useProjectId()!
  const consumption = useApiQuery(CONSUMPTION, (client) => client.accounts.billingConsumption({ params: { id: projectId } }))
  // Stripe's checkout sends the user back here (src/http/api/dashboard.ts, billingPagePath).
  const checkout = useSearchParams()[0].get("checkout")
  return (
    <div className="space-y-6">
      {checkout === "success" && <Notice>Checkout complete: the subscription is recorded as soon as Stripe confirms it.</Notice>}
      {checkout === "cancelled" && <Notice>Checkout cancelled: nothing was bought.</Notice>}
      <QueryView query={consumption}>
        {(month) => (
          <Table label="This month" head={["Category", "Emails", "Monthly cap"]}>
            {CATEGORIES.map(([category, label]) => {
              const used = month.usage[category]
              const cap = month.limits[category]
              return (
                <tr key={category}>
                  <td className={cell}>{label}</td>
                  <td className={cell}>
                    <span className="tabular-nums">{used.toLocaleString()}</span>
                    {cap !== null && (
                      <span className="mt-1 block h-1.5 w-32 overflow-hidden rounded bg-slate-100" aria-hidden="true">
                        <span className={`block h-full ${used >= cap ? "bg-red-500" : "bg-indigo-500"}`} style={{ width: `${Math.min(100, cap === 0 ? 100 : (used / cap) * 100)}%` }} />
                      </span>
                    )}
                  </td>
                  <td className={`${cell} tabular-nums`}>{cap === null ? "none" : cap.toLocaleString()}</td>
                </tr>
              )
            })}
          </Table>
        )}
      </QueryView>
      {consumption.data && (
        <p className="text-sm text-slate-500">{monthOf(consumption.data.periodStart)} (the calendar month in UTC); each email counts once, whatever its retries.</p>
      )}
      <LimitsForm />
    </div>
  )
}

function LimitsForm() {
  const projectId = useProjectId()!
  const { can } = useCurrentProject()
  const limits = useApiQuery(LIMITS, (client) => client.accounts.getBillingLimits({ params: { id: projectId } }))
  const [draft, setDraft] = useState<Record<Category, string> | null>(null)
  useEffect(() => {
    if (limits.data && draft === null) {
      setDraft(Object.fromEntries(CATEGORIES.map(([category]) => [category, limits.data[category]?.toString() ?? ""])) as Record<Category, string>)
    }
  }, [limits.data, draft])
  const save = useApiMutation((client, payload: Limits) => client.accounts.putBillingLimits({ params: { id: projectId }, payload }), {
    invalidates: [LIMITS, CONSUMPTION]
  })
  return (
    <Card title="Monthly caps">
      <QueryView query={limits}>
        {() =>
          draft && (
            <form
              onSubmit={(event) => {
                event.preventDefault()
                save.mutate(Object.fromEntries(CATEGORIES.map(([category]) => [category, draft[category] === "" ? null : Number(draft[category])])) as Limits)
              }}
            >
              <p className="mb-4 text-sm text-slate-600">
                Leave a cap empty for none. Over the transactional cap, sends are refused; campaigns and workflows wait at theirs and resume when there is room.
              </p>
              <div className="grid grid-cols-1 gap-4 sm:grid-cols-2">
                {CATEGORIES.map(([category, label]) => (
                  <label key={category} className="block text-sm font-medium text-slate-700">
                    {label}
                    <input
                      className="input mt-1 tabular-nums"
                      type="number"
                      min={0}
                      step={1}
                      inputMode="numeric"
                      placeholder="No cap"
                      value={draft[category]}
                      disabled={!can("manage")}
                      onChange={(event) => setDraft({ ...draft, [category]: event.target.value })}
                    />
                  </label>
                ))}
              </div>
              {can("manage")
                ? <button type="submit" className="btn-primary mt-4" disabled={save.isPending}>Save caps</button>
                : <p className="mt-4 text-sm text-slate-500">Admins and owners can change the caps.</p>}
              {save.isSuccess && <div className="mt-4"><Notice>Caps saved.</Notice></div>}
              <MutationError error={save.error} />
            </form>
          )}
      </QueryView>
    </Card>
  )
}
