/**
 * The set-up of mail tests: a test DNS server, an SMTP sink, and a stack (api + worker in one process)
 * sending to the sink, resolving through the DNS server, on a fixed port so its links are followable.
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
export const verifyDomain = async (context: Pick<MailContext, "api" | "dns">, key: string, domain: string) => {
  const created = await request(context.api.url, "POST", "/domains", { key, body: { domain } })
  expect(created.status).toBe(201)
  const dkim = created.json.records.find((record: { purpose: string }) => record.purpose === "DKIM")
  context.dns.addTxt(dkim.name, dkim.value)
  const verified = await request(context.api.url, "GET", `/domains/${created.json.id}/verify`, { key })
  expect(verified.json.status).toBe("VERIFIED")
  return verified.json
}

export interface MailStack {
  readonly stack: Stack
  readonly dns: TestDnsServer
  readonly smtp: SmtpSink
  stop(): Promise<void>
}

/**
 * A test DNS server, an SMTP sink and a stack wired to them (no processes started yet), throttle off
 * unless `env` says otherwise, on a fixed port so the links it puts in mail are followable.
 */
export const createMailStack = async (env: Record<string, string> = {}): Promise<MailStack> => {
  const dns = await startDnsServer()
  const smtp = await startSmtpSink()
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
