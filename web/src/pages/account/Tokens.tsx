/** The pages a mailed link opens (verify email, reset password) and the request for a reset link. */
import { useQueryClient } from "@tanstack/react-query"
import { useEffect, useRef } from "react"
import { Link, useSearchParams } from "react-router"
import { useApiMutation } from "../../api/hooks.ts"
import { accountKey, signInPath, useMe } from "../../api/session.ts"
import { Field, MutationError, Notice } from "../../components/Form.tsx"
import { Loading } from "../../components/States.tsx"
import { AccountFrame, fieldOf } from "./Frame.tsx"

/**
 * Verifying takes the account's session as well as the link (the link proves the mailbox, the session the
 * password): a visitor who is not signed in is sent to sign in first and brought back here.
 */
export function VerifyEmailPage() {
  const token = useSearchParams()[0].get("token")
  const me = useMe()
  const queryClient = useQueryClient()
  const verify = useApiMutation((client, token: string) => client.auth.verifyEmail({ payload: { token } }), {
    // The signed-in user, cached unverified, is verified now (the reminder banner goes).
    onSuccess: () => void queryClient.invalidateQueries({ queryKey: accountKey("me") })
  })
  const resend = useApiMutation((client, _: void) => client.auth.requestVerification({}))
  const signedIn = me.isSuccess
  // The link is opened once: verify at once (a ref, so React's double effect in development cannot send it twice).
  const sent = useRef(false)
  useEffect(() => {
    if (token && signedIn && !sent.current) {
      sent.current = true
      verify.mutate(token)
    }
  }, [token, signedIn, verify])

  const here = token === null ? "/verify-email" : `/verify-email?token=${encodeURIComponent(token)}`
  return (
    <AccountFrame title="Verify your email" footer={<p><Link className="link" to="/p">Go to your projects</Link></p>}>
      {me.isPending
        ? <Loading />
        : !signedIn
        ? (
          <>
            <p className="text-slate-700">Sign in to the account this link was mailed for, and it is verified.</p>
            <Link className="btn-primary mt-4 w-full" to={signInPath(here)}>Sign in</Link>
            <p className="mt-4 text-sm text-slate-500">If you did not create an account, ignore the mail: nothing happens.</p>
          </>
        )
        : token === null
        ? <p className="text-slate-700">Open the link we mailed you to confirm your address.</p>
        : verify.isSuccess
        ? <Notice>Your email address is verified.</Notice>
        : verify.isError
        ? <MutationError error={verify.error} />
        : <Loading label="Verifying…" />}
      {signedIn && (token === null || verify.isError) && (
        <div className="mt-4">
          {resend.isSuccess
            ? <Notice>We mailed you a new link.</Notice>
            : <button type="button" className="btn-secondary" disabled={resend.isPending} onClick={() => resend.mutate()}>Send a new link</button>}
          <MutationError error={resend.error} />
        </div>
      )}
    </AccountFrame>
  )
}

export function ForgotPasswordPage() {
  const request = useApiMutation((client, email: string) => client.auth.requestPasswordReset({ payload: { email } }))
  return (
    <AccountFrame title="Forgot your password" footer={<p><Link className="link" to="/signin">Back to sign in</Link></p>}>
      {request.isSuccess
        ? <Notice>If an account exists for {request.variables}, we mailed it a link to choose a new password. The link works once, for an hour.</Notice>
        : (
          <form
            className="space-y-4"
            onSubmit={(event) => {
              event.preventDefault()
              request.mutate(fieldOf(event.currentTarget, "email"))
            }}
          >
            <Field label="Email" name="email" type="email" autoComplete="email" required />
            <button type="submit" className="btn-primary w-full" disabled={request.isPending}>Mail me a link</button>
          </form>
        )}
      <MutationError error={request.error} />
    </AccountFrame>
  )
}

export function ResetPasswordPage() {
  const token = useSearchParams()[0].get("token")
  const reset = useApiMutation((client, payload: { token: string; password: string }) => client.auth.resetPassword({ payload }))
  return (
    <AccountFrame title="Choose a new password" footer={<p><Link className="link" to="/forgot-password">Ask for a new link</Link></p>}>
      {token === null
        ? <p className="text-slate-700">This page needs the link from the reset mail.</p>
        : reset.isSuccess
        ? <Notice>Your password is changed and your other sessions are signed out. <Link className="link" to="/signin">Sign in</Link></Notice>
        : (
          <form
            className="space-y-4"
            onSubmit={(event) => {
              event.preventDefault()
              reset.mutate({ token, password: fieldOf(event.currentTarget, "password") })
            }}
          >
            <Field label="New password" name="password" type="password" autoComplete="new-password" required minLength={8} maxLength={256} hint="At least 8 characters" />
            <button type="submit" className="btn-primary w-full" disabled={reset.isPending}>Set password</button>
          </form>
        )}
      <MutationError error={reset.error} />
    </AccountFrame>
  )
}
