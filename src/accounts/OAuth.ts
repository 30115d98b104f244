/**
 * Sign-in through GitHub and Google (`arctic`'s OAuth 2.0 client, PKCE). Google is OpenID Connect: its
 * endpoints come from GOOGLE_ISSUER's discovery document and the ID token is verified (`jose`, the
 * issuer's JWKS, audience = our client id). GitHub's account email is its primary verified email.
 * A provider is offered only when both its client id and secret are set.
 */
import { CodeChallengeMethod, generateCodeVerifier, generateState, OAuth2Client } from "arctic"
import { Context, Data, Effect, Layer, Redacted } from "effect"
import { createRemoteJWKSet, jwtVerify } from "jose"
import { AppConfig } from "../config.ts"

export type ProviderId = "github" | "google"

export interface ProviderAccount {
  /** The provider's stable id of the account. */
  readonly subject: string
  /** Lower-cased; only when the provider says it is verified. */
  readonly verifiedEmail: string | undefined
}

export interface AuthorizationStart {
  readonly url: string
  readonly state: string
  readonly codeVerifier: string
}

export class OAuthFailed extends Data.TaggedError("OAuthFailed")<{ readonly message: string }> {}

interface Provider {
  readonly id: ProviderId
  readonly name: string
  readonly start: () => Effect.Effect<AuthorizationStart, OAuthFailed>
  readonly finish: (code: string, codeVerifier: string) => Effect.Effect<ProviderAccount, OAuthFailed>
}

const attempt = <A>(what: string, run: () => Promise<A>) =>
  Effect.tryPromise({
    try: run,
    catch: (cause) => new OAuthFailed({ message: `${what}: ${cause instanceof Error ? cause.message : String(cause)}` })
  })

const getJson = async (url: string, accessToken: string) => {
  const response = await fetch(url, {
    headers: { authorization: `Bearer ${accessToken}`, accept: "application/json", "user-agent": "mailstream" },
    signal: AbortSignal.timeout(10_000)
  })
  if (!response.ok) throw new Error(`${url} answered ${response.status}`)
  return response.json() as Promise<unknown>
}

export class OAuth extends Context.Service<OAuth, {
  readonly providers: ReadonlyArray<{ readonly id: ProviderId; readonly name: string }>
  readonly start: (provider: ProviderId) => Effect.Effect<AuthorizationStart, OAuthFailed> | undefined
  readonly finish: (provider: ProviderId, code: string, codeVerifier: string) => Effect.Effect<ProviderAccount, OAuthFailed> | undefined
}>()("app/accounts/OAuth") {
  static readonly layer = Layer.effect(
    OAuth,
    Effect.gen(function*() {
      const config = yield* AppConfig
      const redirectUri = (id: ProviderId) => `${config.publicUrl}/auth/oauth/${id}/callback`
      const providers: Array<Provider> = []

      if (config.githubClientId && config.githubClientSecret) {
        const client = new OAuth2Client(config.githubClientId, Redacted.value(config.githubClientSecret), redirectUri("github"))
        providers.push({
          id: "github",
          name: "GitHub",
          start: () =>
            Effect.sync(() => {
              const state = generateState()
              const codeVerifier = generateCodeVerifier()
              const url = client.createAuthorizationURLWithPKCE(
                `${config.githubUrl}/login/oauth/authorize`,
                state,
                CodeChallengeMethod.S256,
                codeVerifier,
                ["read:user", "user:email"]
              )
              return { url: url.toString(), state, codeVerifier }
            }),
          finish: (code, codeVerifier) =>
            Effect.gen(function*() {
              const tokens = yield* attempt("GitHub token exchange", () =>
                client.validateAuthorizationCode(`${config.githubUrl}/login/oauth/access_token`, code, codeVerifier))
              const accessToken = tokens.accessToken()
              const user = (yield* attempt("GitHub user", () =>
                getJson(`${config.githubApiUrl}/user`, accessToken))) as { id?: unknown }
              const emails = (yield* attempt("GitHub emails", () => getJson(`${config.githubApiUrl}/user/emails`, accessToken))) as Array<
                { email?: unknown; primary?: unknown; verified?: unknown }
              >
              if (user.id === undefined) return yield* new OAuthFailed({ message: "GitHub did not name the account" })
              const primary = Array.isArray(emails) ? emails.find((entry) => entry.primary === true && entry.verified === true) : undefined
              return {
                subject: String(user.id),
                verifiedEmail: typeof primary?.email === "string" ? primary.email.toLowerCase() : undefined
              }
            })
        })
      }

      if (config.googleClientId && config.googleClientSecret) {
        const clientId = config.googleClientId
        const client = new OAuth2Client(clientId, Redacted.value(config.googleClientSecret), redirectUri("google"))
        // Discovery once, lazily (the issuer may be unreachable at start-up).
        let discovered:
          | Promise<{ authorization_endpoint: string; token_endpoint: string; jwks: ReturnType<typeof createRemoteJWKSet>; issuer: string }>
          | undefined
        const discover = () =>
          attempt("Google discovery", () => {
            discovered ??= fetch(`${config.googleIssuer}/.well-known/openid-configuration`, { signal: AbortSignal.timeout(10_000) })
              .then((response) => {
                if (!response.ok) throw new Error(`discovery answered ${response.status}`)
                return response.json() as Promise<
                  { authorization_endpoint: string; token_endpoint: string; jwks_uri: string; issuer: string }
                >
              })
              .then((document) => ({ ...document, jwks: createRemoteJWKSet(new URL(document.jwks_uri)) }))
              .catch((error) => {
                discovered = undefined
                throw error
              })
            return discovered
          })
        providers.push({
          id: "google",
          name: "Google",
          start: () =>
            Effect.map(discover(), (document) => {
              const state = generateState()
              const codeVerifier = generateCodeVerifier()
              const url = client.createAuthorizationURLWithPKCE(
                document.authorization_endpoint,
                state,
                CodeChallengeMethod.S256,
                codeVerifier,
                ["openid", "email"]
              )
              return { url: url.toString(), state, codeVerifier }
            }),
          finish: (code, codeVerifier) =>
            Effect.gen(function*() {
              const document = yield* discover()
              const tokens = yield* attempt("Google token exchange", () =>
                client.validateAuthorizationCode(document.token_endpoint, code, codeVerifier))
              const { payload } = yield* attempt("Google ID token", () =>
                jwtVerify(tokens.idToken(), document.jwks, { issuer: document.issuer, audience: clientId }))
              if (typeof payload.sub !== "string")
                return yield* new OAuthFailed({ message: "the ID token names no subject" })
              return {
                subject: payload.sub,
                verifiedEmail: payload.email_verified === true && typeof payload.email === "string"
                  ? payload.email.toLowerCase()
                  : undefined
              }
            })
        })
      }

      const find = (id: ProviderId) => providers.find((provider) => provider.id === id)
      return OAuth.of({
        providers: providers.map(({ id, name }) => ({ id, name })),
        start: (id) => find(id)?.start(),
        finish: (id, code, codeVerifier) => find(id)?.finish(code, codeVerifier)
      })
    })
  )
}
