/** Sign in (password or a configured OAuth provider) and sign up; both go on to `next` afterwards. */
import { useQueryClient } from "@tanstack/react-query"
import { Link, useNavigate, useSearchParams } from "react-router"
import { fieldError } from "../../api/fieldErrors.ts"
import { useApiMutation } from "../../api/hooks.ts"
import { forgetEverything, safeNext, useAccountQuery } from "../../api/session.ts"
import { Field, MutationError } from "../../components/Form.tsx"
import { AccountFrame, fieldOf } from "./Frame.tsx"

/** After a new session: drop what the previous one cached, then go where the user was going. */
const useEnter = () => {
  const [params] = useSearchParams()
  const navigate = useNavigate()
  const queryClient = useQueryClient()
  return () => {
    forgetEverything(queryClient)
    void navigate(safeNext(params.get("next")), { replace: true })
  }
}

/** The `next` parameter carried over to the sibling page's link. */
const withNext = (path: string, params: URLSearchParams) => {
  const next = params.get("next")
  return next ? `${path}?next=${encodeURIComponent(next)}` : path
}

function OAuthButtons() {
  const config = useAccountQuery(["oauth-config"], (client) => client.auth.oauthConfig({}))
  const providers = config.data?.providers ?? []
  if (providers.length === 0) return null
  return (
    <div className="mt-6 border-t border-slate-200 pt-6">
      <p className="mb-3 text-center text-sm text-slate-500">or</p>
      <div className="grid gap-2">
        {providers.map((provider) => (
          <a key={provider.id} href={provider.url} className="btn-secondary w-full">Continue with {provider.name}</a>
        ))}
      </div>
    </div>
  )
}

export function SignInPage() {
  const [params] = useSearchParams()
  const enter = useEnter()
  const login = useApiMutation((client, payload: { email: string; password: string }) => client.auth.login({ payload }), { onSuccess: enter })
  return (
    <AccountFrame
      title="Sign in"
      footer={
        <>
          <p>No account yet? <Link className="link" to={withNext("/signup", params)}>Create one</Link></p>
          <p><Link className="link" to="/forgot-password">Forgot your password?</Link></p>
        </>
      }
    >
      <form
        className="space-y-4"
        onSubmit={(event) => {
          event.preventDefault()
          login.mutate({ email: fieldOf(event.currentTarget, "email"), password: fieldOf(event.currentTarget, "password") })
        }}
      >
        <Field label="Email" name="email" type="email" autoComplete="email" required error={fieldError(login.error, "email")} />
        <Field label="Password" name="password" type="password" autoComplete="current-password" required error={fieldError(login.error, "password")} />
        <button type="submit" className="btn-primary w-full" disabled={login.isPending}>Sign in</button>
      </form>
      <MutationError error={login.error} fields={["email", "password"]} />
      <OAuthButtons />
    </AccountFrame>
  )
}

export function SignUpPage() {
  const [params] = useSearchParams()
  const inviteToken = params.get("invite") ?? undefined
  const enter = useEnter()
  const signup = useApiMutation(
    (client, payload: { email: string; password: string; inviteToken?: string }) => client.auth.signup({ payload }),
    { onSuccess: enter }
  )
  return (
    <AccountFrame
      title="Create an account"
      footer={<p>Have an account? <Link className="link" to={withNext("/signin", params)}>Sign in</Link></p>}
    >
      {inviteToken && <p className="mb-4 text-sm text-slate-600">Sign up with the email address the invitation was sent to, and you join its project.</p>}
      <form
        className="space-y-4"
        onSubmit={(event) => {
          event.preventDefault()
          signup.mutate({
            email: fieldOf(event.currentTarget, "email"),
            password: fieldOf(event.currentTarget, "password"),
            ...(inviteToken ? { inviteToken } : {})
          })
        }}
      >
        <Field label="Email" name="email" type="email" autoComplete="email" required error={fieldError(signup.error, "email")} />
        <Field
          label="Password"
          name="password"
          type="password"
          autoComplete="new-password"
          required
          minLength={8}
          maxLength={256}
          hint="At least 8 characters"
          error={fieldError(signup.error, "password")}
        />
        <button type="submit" className="btn-primary w-full" disabled={signup.isPending}>Create account</button>
      </form>
      <MutationError error={signup.error} fields={["email", "password"]} />
      <OAuthButtons />
    </AccountFrame>
  )
}
