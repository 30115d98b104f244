/**
 * The mail environment of the mail benchmarks (send, campaigns, workflows): test/support's mail stack —
 * the test DNS server and the service wired to it and to an SMTP sink, throttle off — with the sink in a
 * process of its own (bench/smtpSink.ts: it only counts), and the project's sending domain verified.
 */
import type { TestDnsServer } from "../../test/support/dns.ts"
import { createMailStack, type SmtpEndpoint, verifyDomain } from "../../test/support/mail.ts"
import type { Service } from "../../test/support/stack.ts"
import { type BenchEnvironment, environmentOn, SERVICE_ENV } from "./environment.ts"
import { startProcess, stopProcess } from "./processes.ts"
import { sleep } from "./settings.ts"

export interface SinkStats {
  readonly count: number
  readonly first: number | null
  readonly last: number | null
  readonly dkimSigned: number
  /** Arrival time of every message (ms), when asked for. */
  readonly times?: Array<number>
}

export interface SinkProcess extends SmtpEndpoint {
  readonly port: string
  stats(withTimes?: boolean): Promise<SinkStats>
  /** Resolves once `count` messages arrived in all; rejects after `timeoutMs`. */
  waitForCount(count: number, timeoutMs: number): Promise<SinkStats>
}

const startSinkProcess = async (): Promise<SinkProcess> => {
  const { child, match } = await startProcess(["bench/smtpSink.ts"], {}, /smtp=(\d+) stats=(\d+)/)
  const [, smtpPort, statsPort] = match
  const stats = async (withTimes = false) =>
    (await fetch(`http://127.0.0.1:${statsPort}/stats${withTimes ? "?times=1" : ""}`).then((r) => r.json())) as SinkStats
  return {
    url: `smtp://127.0.0.1:${smtpPort}`,
    port: smtpPort!,
    stats,
    async waitForCount(count, timeoutMs) {
      const deadline = Date.now() + timeoutMs
      for (;;) {
        const now = await stats()
        if (now.count >= count) return now
        if (Date.now() > deadline) throw new Error(`only ${now.count} of ${count} messages arrived`)
        await sleep(100)
      }
    },
    close: () => stopProcess(child)
  }
}

export const SENDING_DOMAIN = "bench.test"

export interface MailEnvironment extends BenchEnvironment {
  readonly dns: TestDnsServer
  readonly sink: SinkProcess
  /** Adds SENDING_DOMAIN to the project through `api` and verifies it (its DKIM record in the test DNS). */
  verifyDomain(api: Service): Promise<void>
  /** The domain's DKIM key and selector, for the bare send loop (the baseline). */
  dkimKey(): Promise<{ readonly key: string; readonly selector: string }>
}

export const withMailEnvironment = async <A>(use: (environment: MailEnvironment) => Promise<A>): Promise<A> => {
  const mail = await createMailStack(SERVICE_ENV, startSinkProcess)
  try {
    const { environment, close } = await environmentOn(mail.stack)
    try {
      return await use({
        ...environment,
        dns: mail.dns,
        sink: mail.smtp,
        verifyDomain: async (api) => void await verifyDomain({ api, dns: mail.dns }, environment.project.secretKey, SENDING_DOMAIN),
        dkimKey: async () =>
          (await environment.query<{ key: string; selector: string }>(
            "SELECT dkim_private_key AS key, dkim_selector AS selector FROM domains"
          ))[0]!
      })
    } finally {
      await close()
    }
  } finally {
    await mail.stop()
  }
}
