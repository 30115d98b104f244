/**
 * An invitation link: a signed-in user joins the project; a visitor signs up with the invitation (or
 * signs in and comes back here).
 */
import { useQueryClient } from "@tanstack/react-query"
import { Link, useNavigate, useSearchParams } from "react-router"
import { useApiMutation } from "../../api/hooks.ts"
import { accountKey, signInPath, useMe } from "../../api/session.ts"
import { MutationError } from "../../components/Form.tsx"
import { Loading } from "../../components/States.tsx"
import { AccountFrame } from "./Frame.tsx"

export function AcceptInvitationPage() {
  const token = useSearchParams()[0].get("token")
  const me = useMe()
  const navigate = useNavigate()
  const queryClient = useQueryClient()
  const accept = useApiMutation((client, token: string) => client.auth.acceptInvitation({ payload: { token } }), {
    onSuccess: async (joined) => {
      await queryClient.invalidateQueries({ queryKey: accountKey("projects") })
      void navigate(`/p/${joined.projectId}`)
    }
  })

  if (token === null) {
    return <AccountFrame title="Join a project"><p className="text-slate-700">This page needs the link from the invitation mail.</p></AccountFrame>
  }
  const here = `/accept-invitation?token=${encodeURIComponent(token)}`
  return (
    <AccountFrame title="Join a project">
      {me.isPending
        ? <Loading />
        : me.isSuccess
        ? (
          <>
            <p className="text-slate-700">You are signed in as <strong>{me.data.email}</strong>. The invitation must be addressed to this email.</p>
            <button type="button" className="btn-primary mt-4 w-full" disabled={accept.isPending} onClick={() => accept.mutate(token)}>Join the project</button>
            <MutationError error={accept.error} />
          </>
        )
        : (
          <>
            <p className="text-slate-700">You were invited to a project. Create an account with the invited email, or sign in if you have one.</p>
            <div className="mt-4 grid gap-2">
              <Link className="btn-primary" to={`/signup?invite=${encodeURIComponent(token)}`}>Create an account</Link>
              <Link className="btn-secondary" to={signInPath(here)}>Sign in</Link>
            </div>
          </>
        )}
    </AccountFrame>
  )
}
