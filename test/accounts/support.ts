/** A browser-like client for the dashboard API: keeps cookies, sends the dashboard's Origin on writes. */
import { readdir, readFile, stat } from "node:fs/promises"
import { join } from "node:path"
import { readResponse } from "../support/stack.ts"

export interface Reply {
  readonly status: number
  readonly headers: Headers
  readonly json: any
  readonly text: string
}

export class Browser {
  readonly cookies = new Map<string, string>()
  readonly base: string
  readonly origin: string
  constructor(base: string, origin: string = base) {
    this.base = base
    this.origin = origin
  }

  cookieHeader() {
    return [...this.cookies].map(([name, value]) => `${name}=${value}`).join("; ")
  }

  keep(headers: Headers) {
    for (const line of headers.getSetCookie()) {
      const [pair, ...attributes] = line.split(";")
      const [name, ...rest] = pair!.split("=")
      const expired = attributes.some((attribute) =>
        /max-age=0\b/i.test(attribute.trim()) || /expires=thu, 01 jan 1970/i.test(attribute.trim())
      )
      if (expired) this.cookies.delete(name!.trim())
      else this.cookies.set(name!.trim(), rest.join("="))
    }
  }

  async call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Reply> {
    const all: Record<string, string> = { ...headers }
    if (this.cookies.size > 0) all.cookie = this.cookieHeader()
    if (method !== "GET" && method !== "HEAD" && all.origin === undefined) all.origin = this.origin
    if (all.origin === "") delete all.origin
    if (body !== undefined) all["content-type"] = "application/json"
    const response = await fetch(`${this.base}${path}`, {
      method,
      headers: all,
      body: body === undefined ? undefined : JSON.stringify(body),
      redirect: "manual"
    })
    this.keep(response.headers)
    return readResponse(response)
  }

  get(path: string, headers?: Record<string, string>) {
    return this.call("GET", path, undefined, headers)
  }
  post(path: string, body?: unknown, headers?: Record<string, string>) {
    return this.call("POST", path, body ?? {}, headers)
  }
}

/** Signs up a new user and answers a browser holding their session. */
export const signUp = async (base: string, email: string, password = "correct horse battery") => {
  const browser = new Browser(base)
  const reply = await browser.post("/auth/signup", { email, password })
  if (reply.status !== 201) throw new Error(`signup ${email}: ${reply.status} ${reply.text}`)
  return { browser, user: reply.json.user as { id: string; email: string } }
}

/** The newest mail to `to` in the file outbox with a `path` link: its token and text (polls briefly: mail is written after the answer). */
export const mailedLink = async (outbox: string, to: string, path: string, after = 0): Promise<{ token: string; text: string }> => {
  const deadline = Date.now() + 5_000
  for (;;) {
    const names = await readdir(outbox).catch(() => [] as Array<string>)
    const found: Array<{ at: number; token: string; text: string }> = []
    for (const name of names) {
      const text = (await readFile(join(outbox, name), "utf8")).replace(/=\r?\n/g, "").replace(/=3D/g, "=")
      if (!new RegExp(`^To: .*${to.replace(/[.+]/g, "\\$&")}`, "mi").test(text)) continue
      const match = text.match(new RegExp(`${path}\\?token=([A-Za-z0-9_-]+)`))
      if (match) found.push({ at: (await stat(join(outbox, name))).mtimeMs, token: match[1]!, text })
    }
    found.sort((a, b) => a.at - b.at)
    if (found.length > after) return found[found.length - 1]!
    if (Date.now() > deadline) throw new Error(`no mail to ${to} with ${path} in ${outbox}`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

/** The token of the newest link mailed to `to` in the file outbox. */
export const mailedToken = async (outbox: string, to: string, path: string, after = 0): Promise<string> =>
  (await mailedLink(outbox, to, path, after)).token

/** The token of an invitation answer's link (POST /projects/:id/members, .../resend). */
export const invitationToken = (reply: Reply): string => {
  if (reply.status !== 202 && reply.status !== 200) throw new Error(`invitation: ${reply.status} ${reply.text}`)
  return new URL(reply.json.link).searchParams.get("token")!
}

/** `inviter` invites `email` to the project and `invitee`, signed in as that email, accepts: how every member joins. */
export const joinProject = async (
  inviter: Browser,
  projectId: string,
  invitee: Browser,
  email: string,
  role?: "OWNER" | "ADMIN" | "MEMBER"
) => {
  const token = invitationToken(await inviter.post(`/projects/${projectId}/members`, { email, ...(role ? { role } : {}) }))
  const accepted = await invitee.post("/auth/accept-invitation", { token })
  if (accepted.status !== 200) throw new Error(`accept ${email}: ${accepted.status} ${accepted.text}`)
  return accepted.json as { projectId: string; role: string }
}
