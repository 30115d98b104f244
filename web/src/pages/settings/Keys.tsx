/**
 * API keys. The server keeps only their hashes, so a key is shown once: when the project is created and
 * when the keys are rotated. Rotating replaces both at once (the old ones stop working within seconds).
 */
import { useState } from "react"
import { useApiMutation, useProjectId } from "../../api/hooks.ts"
import { Confirm } from "../../components/Confirm.tsx"
import { CopyButton } from "../../components/CopyButton.tsx"
import { Card, MutationError } from "../../components/Form.tsx"
import { RequiresRole } from "./Settings.tsx"

function Key({ label, value }: { readonly label: string; readonly value: string }) {
  return (
    <div>
      <p className="text-sm font-medium text-slate-700">{label}</p>
      <div className="mt-1 flex items-center gap-2">
        <code className="min-w-0 flex-1 truncate rounded bg-slate-100 px-2 py-1.5 font-mono text-sm text-slate-900" data-testid={label}>{value}</code>
        <CopyButton value={value} label={label} />
      </div>
    </div>
  )
}

export function KeysShownOnce({ keys }: { readonly keys: { readonly publicKey: string; readonly secretKey: string } }) {
  return (
    <div className="space-y-3 rounded-lg border border-amber-200 bg-amber-50 p-4">
      <p className="text-sm font-medium text-amber-900">Copy these keys now: they are stored hashed and cannot be shown again.</p>
      <Key label="Public key" value={keys.publicKey} />
      <Key label="Secret key" value={keys.secretKey} />
    </div>
  )
}

export function KeysPage() {
  return <RequiresRole permission="manage"><Keys /></RequiresRole>
}

function Keys() {
  const projectId = useProjectId()!
  const [confirming, setConfirming] = useState(false)
  const rotate = useApiMutation((client, _: void) => client.accounts.regenerateKeys({ params: { id: projectId } }), {
    onSuccess: () => setConfirming(false)
  })
  return (
    <Card title="API keys">
      <div className="space-y-2 text-sm text-slate-700">
        <p>The <strong>public key</strong> (<code className="font-mono">pk_…</code>) only tracks events (<code className="font-mono">/v1/track</code>) and may ship in a web page or app.</p>
        <p>The <strong>secret key</strong> (<code className="font-mono">sk_…</code>) reaches everything else: keep it on your servers.</p>
        <p>Both were shown when the project was created. Lost them? Rotate: both keys are replaced and the old ones stop working within seconds.</p>
      </div>
      {rotate.data && <div className="mt-5"><KeysShownOnce keys={rotate.data} /></div>}
      <button type="button" className="btn-secondary mt-5" onClick={() => setConfirming(true)}>Rotate keys</button>
      <MutationError error={rotate.error} />
      <Confirm
        open={confirming}
        title="Rotate the keys?"
        action="Rotate keys"
        danger
        busy={rotate.isPending}
        onConfirm={() => rotate.mutate()}
        onCancel={() => setConfirming(false)}
      >
        Both keys are replaced now. Every application using the current keys gets 401 within seconds, until it has the new ones.
      </Confirm>
    </Card>
  )
}
