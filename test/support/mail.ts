/**
 * The mail environment of tests and benchmarks: a test DNS server, an SMTP sink, and a stack sending to
 * the sink, resolving through the DNS server, on a fixed port so its links are followable; and sending
 * domains verified through that DNS server. Tests use the in-process sink (parsed messages); the
 * benchmarks pass their sink process (bench/harness/mail.ts).
 */
import { afterAll, beforeAll, expect } from "vitest"
import { createServer } from "node:net"
import { startDnsServer, type TestDnsServer } from "./dns.ts"
import { eventually } from "./nats.ts"
import { startSmtpSink, type SmtpSink } from "./smtp.ts"
import { createStack, request, type Service, type Stack, type TestProject } from "./stack.ts"

export const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as { port: number }).port
      server.close(() => resolve(port))
    })
  })

export interface MailContext {
  readonly stack: Stack
  readonly api: Service
  readonly project: TestProject
  readonly dns: TestDnsServer
  readonly smtp: SmtpSink
}

/** Adds the domain to the project, publishes its DKIM record in the test DNS and verifies it. */
export const verifyDomain = async (
  context: { readonly api: Pick<Service, "url">; readonly dns: TestDnsServer },
  key: string,
  domain: string
) => {
  const created = await request(context.api.url, "POST", "/domains", { key, body: { domain } })
  if (created.status !== 201) throw new Error(`POST /domains answered ${created.status}: ${created.text}`)
  const dkim = created.json.records.find((record: { purpose: string }) => record.purpose === "DKIM")
  context.dns.addTxt(dkim.name, dkim.value)
  const verified = await request(context.api.url, "GET", `/domains/${created.json.id}/verify`, { key })
  if (verified.json?.status !== "VERIFIED") throw new Error(`${domain} not verified: ${verified.text}`)
  return verified.json
}

/** Where the stack sends mail: the in-process sink of the tests, or the benchmarks' sink process. */
export interface SmtpEndpoint {
  readonly url: string
  close(): Promise<void>
}

export interface MailStack<Sink extends SmtpEndpoint = SmtpSink> {
  readonly stack: Stack
  readonly dns: TestDnsServer
  readonly smtp: Sink
  stop(): Promise<void>
}

/**
 * A test DNS server, an SMTP sink and a stack wired to them (no processes started yet), throttle off
 * unless `env` says otherwise, on a fixed port so the links it puts in mail are followable.
 */
export function createMailStack(env?: Record<string, string>): Promise<MailStack>
export function createMailStack<Sink extends SmtpEndpoint>(
  env: Record<string, string>,
  startSink: () => Promise<Sink>
): Promise<MailStack<Sink>>
export async function createMailStack(
  env: Record<string, string> = {},
  startSink: () => Promise<SmtpEndpoint> = startSmtpSink
): Promise<MailStack<SmtpEndpoint>> {
  const dns = await startDnsServer()
  const smtp = await startSink()
  const port = await freePort()
  const stack = await createStack({
    RATE_LIMIT_PER_MINUTE: "0",
    SMTP_URL: smtp.url,
    DNS_SERVERS: dns.address,
    SEND_RATE_PER_SECOND: "0",
    PORT: String(port),
    PUBLIC_URL: `http://127.0.0.1:${port}`,
    ...env
  })
  return {
    stack,
    dns,
    smtp,
    async stop() {
      await stack.stop()
      await smtp.close()
      await dns.close()
    }
  }
}

export const withMailStack = (use: (context: MailContext) => void, env: Record<string, string> = {}) => {
  let mail: MailStack | undefined
  beforeAll(async () => {
    mail = await createMailStack(env)
    const { stack, dns, smtp } = mail
    const api = await stack.start("all")
    const project = await stack.createProject()
    await verifyDomain({ api, dns }, project.secretKey, "acme.test")
    use({ stack, api, project, dns, smtp })
  })
  afterAll(async () => {
    await mail?.stop()
  })
}

/** Waits until the email reaches the status. */
export const emailStatus = (context: Pick<MailContext, "api" | "project">, id: string, status: string) =>
  eventually(async () => {
    const email = await request(context.api.url, "GET", `/emails/${id}`, { key: context.project.secretKey })
    expect(email.json?.status).toBe(status)
    return email.json
  })
