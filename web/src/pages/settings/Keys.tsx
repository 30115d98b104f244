/**
 * API keys. The public key is kept in clear (it only tracks events and ships in web pages), so it is shown
 * at any time to every member; the secret key is stored hashed and shown once: when the project is created
 * and when it is rotated. Each key rotates on its own (the old one stops working within seconds), or both
 * at once.
 */
import { useState } from "react"
import { useApiMutation, useApiQuery, useProjectId } from "../../api/hooks.ts"
import { useCurrentProject } from "../../api/session.ts"
import { Confirm } from "../../components/Confirm.tsx"
import { CopyButton } from "../../components/CopyButton.tsx"
import { Card, MutationError } from "../../components/Form.tsx"
import { QueryView } from "../../components/States.tsx"

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

export function KeysShownOnce({ keys }: { readonly keys: { readonly publicKey?: string; readonly secretKey?: string } }) {
  return (
    <div className="space-y-3 rounded-lg border border-amber-200 bg-amber-50 p-4">
      <p className="text-sm font-medium text-amber-900">
        {keys.secretKey ? "Copy the secret key now: it is stored hashed and cannot be shown again." : "The new public key is in use."}
      </p>
      {keys.publicKey && <Key label="Public key" value={keys.publicKey} />}
      {keys.secretKey && <Key label="Secret key" value={keys.secretKey} />}
    </div>
  )
}

type Rotation = "public" | "secret" | "both"

const ROTATIONS: Record<Rotation, { readonly title: string; readonly action: string; readonly effect: string }> = {
  public: {
    title: "Rotate the public key?",
    action: "Rotate public key",
    effect: "The public key is replaced now: web pages and apps tracking events with the current one get 401 within seconds, until they have the new one. The secret key does not change."
  },
  secret: {
    title: "Rotate the secret key?",
    action: "Rotate secret key",
    effect: "The secret key is replaced now: servers using the current one get 401 within seconds, until they have the new one. The public key does not change."
  },
  both: {
    title: "Rotate both keys?",
    action: "Rotate both keys",
    effect: "Both keys are replaced now. Every application using the current keys gets 401 within seconds, until it has the new ones."
  }
}

export function KeysPage() {
  const projectId = useProjectId()!
  const canRotate = useCurrentProject().can("manage")
  const [confirming, setConfirming] = useState<Rotation | undefined>(undefined)
  const [shown, setShown] = useState<{ publicKey?: string; secretKey?: string } | undefined>(undefined)
  const publicKey = useApiQuery(["keys", "public"], (client) => client.accounts.publicKey({ params: { id: projectId } }))
  const done = (keys: { publicKey?: string; secretKey?: string }) => {
    setShown(keys)
    setConfirming(undefined)
  }
  const rotateBoth = useApiMutation((client, _: void) => client.accounts.regenerateKeys({ params: { id: projectId } }), {
    invalidates: [["keys"]],
    onSuccess: (keys) => done({ publicKey: keys.publicKey, secretKey: keys.secretKey })
  })
  const rotateOne = useApiMutation((client, kind: "public" | "secret") => client.accounts.rotateKey({ params: { id: projectId, kind } }), {
    invalidates: [["keys"]],
    onSuccess: (rotated) => done(rotated.kind === "public" ? { publicKey: rotated.key } : { secretKey: rotated.key })
  })
  const rotating = rotateBoth.isPending || rotateOne.isPending
  const rotate = (which: Rotation) => (which === "both" ? rotateBoth.mutate() : rotateOne.mutate(which))
  return (
    <Card title="API keys">
      <div className="space-y-2 text-sm text-slate-700">
        <p>The <strong>public key</strong> (<code className="font-mono">pk_…</code>) only tracks events (<code className="font-mono">/v1/track</code>) and may ship in a web page or app.</p>
        <p>The <strong>secret key</strong> (<code className="font-mono">sk_…</code>) reaches everything else: keep it on your servers. It was shown when the project was created and is shown again only when it is rotated.</p>
      </div>
      <div className="mt-5">
        <QueryView query={publicKey}>
          {({ publicKey: key }) =>
            key === null
              ? <p className="text-sm text-slate-700" data-testid="public-key-unknown">This project's public key was made before public keys were kept: rotate the public key to see it here from then on.</p>
              : <Key label="Public key" value={key} />}
        </QueryView>
      </div>
      {shown && <div className="mt-5"><KeysShownOnce keys={shown} /></div>}
      {canRotate
        ? (
          <div className="mt-5 flex flex-wrap gap-2">
            {(["public", "secret", "both"] as const).map((which) => (
              <button key={which} type="button" className="btn-secondary" onClick={() => setConfirming(which)}>{ROTATIONS[which].action}</button>
            ))}
          </div>
        )
        : <p className="mt-5 text-sm text-slate-600">Admins and owners can rotate the keys.</p>}
      <MutationError error={rotateBoth.error ?? rotateOne.error} />
      <Confirm
        open={confirming !== undefined}
        title={ROTATIONS[confirming ?? "both"].title}
        action={ROTATIONS[confirming ?? "both"].action}
        danger
        busy={rotating}
        onConfirm={() => confirming && rotate(confirming)}
        onCancel={() => setConfirming(undefined)}
      >
        {ROTATIONS[confirming ?? "both"].effect}
      </Confirm>
    </Card>
  )
}
