/**
 * The activity feed's item types. Stored events map to them in SQL (ms_activity_type in
 * migrations/0013_analytics.sql); the others come from the contacts table and the activity_log.
 */
export const ACTIVITY_TYPES = [
  "email.sent",
  "email.delivered",
  "email.opened",
  "email.clicked",
  "email.bounced",
  "email.complained",
  "email.received",
  "email.failed",
  "email.suppressed",
  "contact.created",
  "contact.subscribed",
  "contact.unsubscribed",
  "segment.entry",
  "segment.exit",
  "workflow.started",
  "workflow.finished",
  "workflow.failed",
  "campaign.scheduled",
  "campaign.sending",
  "campaign.sent",
  "campaign.cancelled",
  "event"
] as const
export type ActivityType = (typeof ACTIVITY_TYPES)[number]

/** Types recorded as events (the rest: contact.created from contacts, the others from activity_log). */
export const EVENT_TYPES: ReadonlySet<ActivityType> = new Set([
  "email.sent",
  "email.delivered",
  "email.opened",
  "email.clicked",
  "email.bounced",
  "email.complained",
  "email.received",
  "contact.subscribed",
  "contact.unsubscribed",
  "segment.entry",
  "segment.exit",
  "event"
])

export const isActivityType = (value: string): value is ActivityType => (ACTIVITY_TYPES as ReadonlyArray<string>).includes(value)
