/** The shared infrastructure of both roles (src/apiRole.ts, src/workerRole.ts). */
import { Layer } from "effect"
import { Contacts } from "./store/Contacts.ts"
import { DatabaseLive } from "./store/db.ts"
import { Projects } from "./store/Projects.ts"
import { Nats } from "./stream/Nats.ts"
import { Outbox } from "./stream/Outbox.ts"
import { OutboxRelay } from "./stream/OutboxRelay.ts"
import { Invalidations } from "./stream/Invalidations.ts"
import { LiveSignals } from "./stream/LiveSignals.ts"
import { Dns } from "./lib/dns.ts"
import { MailQueue } from "./mail/MailQueue.ts"
import { Domains } from "./store/Domains.ts"
import { Emails } from "./store/Emails.ts"
import { Templates } from "./store/Templates.ts"
import { Campaigns } from "./store/Campaigns.ts"
import { Destinations } from "./store/Destinations.ts"

/** Postgres (migrated) and NATS (streams ensured). */
export const InfraLive = Layer.mergeAll(DatabaseLive, Nats.layer)

/** Repositories and the outbox relay: what both roles need. */
export const CoreLive = Layer.mergeAll(
  Contacts.layer,
  Projects.layer,
  OutboxRelay.layer,
  Invalidations.layer,
  LiveSignals.layer,
  Emails.layer,
  Templates.layer,
  Campaigns.layer,
  Destinations.layer,
  MailQueue.layer.pipe(Layer.provide(Projects.layer)),
  Domains.layer.pipe(Layer.provideMerge(Dns.layer))
).pipe(Layer.provideMerge(Outbox.layer), Layer.provideMerge(InfraLive))
