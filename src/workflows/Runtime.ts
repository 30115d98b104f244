/**
 * What the workflow engine needs from the worker process, in one service: the repositories that steps
 * write through (contacts, templates, executions), the mail queue, the public URL for links, a resolver
 * for webhook hosts (DNS_SERVERS), and the signal that wakes the webhook runner after a batch queued
 * webhook steps. The worker role provides it; project actors carry it into their batch transactions.
 */
import { Context, Effect, Layer, Queue } from "effect"
import { AppConfig } from "../config.ts"
import { Dns, hostResolver } from "../lib/dns.ts"
import { cidrMatcher } from "../domain/addresses.ts"
import type { Resolve } from "../lib/safeHttp.ts"
import { MailQueue } from "../mail/MailQueue.ts"
import { Billing } from "../store/Billing.ts"
import { Contacts } from "../store/Contacts.ts"
import { Templates } from "../store/Templates.ts"
import { WorkflowExecutions } from "../store/WorkflowExecutions.ts"

export class WorkflowRuntime extends Context.Service<WorkflowRuntime, {
  /** How SEND_EMAIL steps and campaign fan-out queue their mail. */
  readonly mail: MailQueue["Service"]
  readonly contacts: Contacts["Service"]
  readonly templates: Templates["Service"]
  /** Executions: lock, load, start, claim, cancel, write back. */
  readonly executions: WorkflowExecutions["Service"]
  /** The monthly caps campaign fan-out and SEND_EMAIL steps queue under. */
  readonly billing: Billing["Service"]
  readonly publicUrl: string
  readonly resolve: Resolve
  /** WEBHOOK_ALLOW_CIDRS: private ranges webhooks may reach anyway (none by default). */
  readonly allowAddress: (address: string) => boolean
  /** Wakes the webhook runner (a batch committed webhook steps to perform). */
  readonly wakeWebhooks: Effect.Effect<void>
  /** Waits for the next wake-up. */
  readonly webhookWakeups: Queue.Queue<void>
}>()("app/workflows/WorkflowRuntime") {
  static readonly layer = Layer.effect(
    WorkflowRuntime,
    Effect.gen(function*() {
      const dns = yield* Dns
      const config = yield* AppConfig
      const webhookWakeups = yield* Queue.sliding<void>(1)
      const lookup = hostResolver(dns)
      return WorkflowRuntime.of({
        mail: yield* MailQueue,
        contacts: yield* Contacts,
        templates: yield* Templates,
        executions: yield* WorkflowExecutions,
        billing: yield* Billing,
        publicUrl: config.publicUrl,
        resolve: lookup,
        allowAddress: cidrMatcher(config.webhookAllowCidrs),
        wakeWebhooks: Effect.asVoid(Queue.offer(webhookWakeups, undefined)),
        webhookWakeups
      })
    })
  ).pipe(Layer.provide(WorkflowExecutions.layer))
}
