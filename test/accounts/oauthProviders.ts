/**
 * Local stand-ins for the OAuth providers: GitHub's OAuth paths on an OAuth 2.0 server
 * (oauth2-mock-server) with its user API beside them, and the whole sign-in a browser goes through.
 */
import { OAuth2Server } from "oauth2-mock-server"
import { expect } from "vitest"
import type { Browser } from "./support.ts"

export interface GitHubAccount {
  id: number
  emails: Array<{ email: string; primary: boolean; verified: boolean }>
}

/** A GitHub whose signed-in account is whatever `account` holds when the service asks. */
export const startGitHub = async () => {
  const account: { current: GitHubAccount } = { current: { id: 0, emails: [] } }
  const server = new OAuth2Server(undefined, undefined, {
    endpoints: { authorize: "/login/oauth/authorize", token: "/login/oauth/access_token" }
  })
  await server.issuer.keys.generate("RS256")
  const answer = (
    res: { writeHead(status: number, headers: Record<string, string>): unknown; end(body: string): unknown },
    body: unknown
  ) => {
    res.writeHead(200, { "content-type": "application/json" })
    res.end(JSON.stringify(body))
  }
  server.service.addRoute("GET", "/user", (req, res) => {
    if (req.headers.authorization?.startsWith("Bearer ")) answer(res, { id: account.current.id, login: "octo" })
    else res.writeHead(401).end()
  })
  server.service.addRoute("GET", "/user/emails", (_req, res) => answer(res, account.current.emails))
  await server.start(0, "127.0.0.1")
  const url = server.issuer.url!.replace(/\/$/, "")
  return {
    server,
    account,
    env: { GITHUB_CLIENT_ID: "gh-client", GITHUB_CLIENT_SECRET: "gh-secret", GITHUB_URL: url, GITHUB_API_URL: url }
  }
}

/** Follows the whole sign-in: our redirect, the provider's consent (automatic here), our callback. */
export const signInWith = async (provider: "google" | "github", browser: Browser, issuerUrl: string) => {
  const start = await browser.get(`/auth/oauth/${provider}`)
  expect(start.status).toBe(302)
  const consent = new URL(start.headers.get("location")!)
  expect(consent.origin).toBe(new URL(issuerUrl).origin)
  expect(consent.searchParams.get("code_challenge_method")).toBe("S256")
  const answered = await fetch(consent, { redirect: "manual" })
  const callback = new URL(answered.headers.get("location")!)
  expect(callback.pathname).toBe(`/auth/oauth/${provider}/callback`)
  return browser.get(`${callback.pathname}${callback.search}`)
}
