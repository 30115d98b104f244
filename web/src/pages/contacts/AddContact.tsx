import { useState } from "react"
import { useNavigate } from "react-router"
import { fieldError } from "../../api/fieldErrors.ts"
import { useApiMutation, useProjectId } from "../../api/hooks.ts"
import { DataFields, useDataFields } from "../../components/DataEditor.tsx"
import { Card, changeClearing, Field, MutationError } from "../../components/Form.tsx"

/** A new contact: its email, subscription and custom data (typed, as on a contact's page). */
export default function AddContact({ onClose }: { readonly onClose: () => void }) {
  const projectId = useProjectId()
  const navigate = useNavigate()
  const [email, setEmail] = useState("")
  const [subscribed, setSubscribed] = useState(true)
  const fields = useDataFields({})
  const create = useApiMutation(
    (client, payload: { email: string; subscribed: boolean; data: Record<string, unknown> }) => client.contacts.upsert({ payload }),
    { invalidates: [["contacts"]], onSuccess: (contact) => void navigate(`/p/${projectId}/contacts/${contact.id}`) }
  )
  return (
    <div className="mb-6">
      <Card title="Add a contact">
        <form
          aria-label="Add a contact"
          onSubmit={(event) => {
            event.preventDefault()
            const data = fields.collect()
            if (data) create.mutate({ email: email.trim(), subscribed, data })
          }}
        >
          <div className="flex flex-col gap-3 sm:flex-row sm:items-end">
            <div className="flex-1"><Field label="Email" type="email" value={email} onChange={changeClearing(create, setEmail)} required autoFocus error={fieldError(create.error, "email")} /></div>
            <label className="flex items-center gap-2 pb-2 text-sm text-slate-700">
              <input type="checkbox" checked={subscribed} onChange={(event) => setSubscribed(event.target.checked)} />
              Subscribed
            </label>
          </div>
          <fieldset className="mt-4">
            <legend className="mb-2 text-sm font-medium text-slate-700">Custom data</legend>
            <DataFields fields={fields}>
              <span className="flex-1" />
              <button type="button" className="btn-secondary" onClick={onClose}>Cancel</button>
              <button type="submit" className="btn-primary" disabled={create.isPending}>Create contact</button>
            </DataFields>
          </fieldset>
        </form>
        <MutationError error={create.error} fields={["email", "subscribed"]} />
      </Card>
    </div>
  )
}
