/**
 * The worker's sender (mail/Sender.ts) as a service: one loop per project with mail queued, for as long
 * as the project's owner lane's partition is leased here. Lane actors wake it, the mail sweep finds what
 * is due, a partition taken over gets its previous owner's mail in flight back.
 */
import { Context, Effect, Layer } from "effect"
import { makeSender } from "../mail/Sender.ts"
import { LiveSignals } from "../stream/LiveSignals.ts"
import { Outbox } from "../stream/Outbox.ts"
import { OutboxRelay } from "../stream/OutboxRelay.ts"
import { OwnedPartitions } from "./OwnedPartitions.ts"

export class MailSender extends Context.Service<MailSender, Effect.Success<ReturnType<typeof makeSender>>>()("app/actors/MailSender") {
  static readonly layer = Layer.effect(
    MailSender,
    Effect.gen(function*() {
      const { owned } = yield* OwnedPartitions
      const relay = yield* OutboxRelay
      return yield* makeSender({
        outbox: yield* Outbox,
        isOwned: (partition) => owned.has(partition),
        wakeRelay: relay.wake,
        changed: (yield* LiveSignals).changed
      })
    })
  )
}
