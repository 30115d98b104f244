/**
 * Changing the signed-in user's password (an account that signs in only through a provider has none: it
 * sets one with "Forgot your password?"). Every other session ends and every reset link mailed is spent.
 */
import { useApiMutation } from "../../api/hooks.ts"
import { useMe } from "../../api/session.ts"
import { Card, Field, MutationError, Notice } from "../../components/Form.tsx"
import { fieldOf } from "./Frame.tsx"

export function ChangePassword() {
  const me = useMe()
  const change = useApiMutation((client, payload: { currentPassword: string; newPassword: string }) => client.auth.changePassword({ payload }))
  if (!me.data?.hasPassword) return null
  return (
    <Card title="Your password">
      <form
        className="grid gap-3 sm:grid-cols-[1fr_1fr_auto] sm:items-end"
        onSubmit={(event) => {
          event.preventDefault()
          const form = event.currentTarget
          change.mutate({ currentPassword: fieldOf(form, "current"), newPassword: fieldOf(form, "new") }, { onSuccess: () => form.reset() })
        }}
      >
        <Field label="Current password" name="current" type="password" autoComplete="current-password" required />
        <Field label="New password" name="new" type="password" autoComplete="new-password" required minLength={8} maxLength={256} />
        <button type="submit" className="btn-primary" disabled={change.isPending}>Change password</button>
      </form>
      <p className="mt-2 text-xs text-slate-500">Your other sessions are signed out, and reset links mailed to you stop working.</p>
      {change.isSuccess && <div className="mt-4"><Notice>Your password is changed; your other sessions are signed out.</Notice></div>}
      <MutationError error={change.error} />
    </Card>
  )
}
