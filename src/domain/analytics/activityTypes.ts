/**
 * The activity feed's item types. Stored events map to them in SQL (ms_activity_type in
 * migrations/0013_analytics.sql); the others come from the contacts table and the activity_log.
 */
/** The email types recorded as events. */
const EMAIL_EVENTS = [
  "email.sent",
  "email.delivered",
  "email.opened",
  "email.clicked",
  "email.bounced",
  "email.complained",
  "email.received"
] as const

/** The contact and segment types recorded as events. */
const AUDIENCE_EVENTS = ["contact.subscribed", "contact.unsubscribed", "segment.entry", "segment.exit"] as const

export const ACTIVITY_TYPES = [
  ...EMAIL_EVENTS,
  "email.failed",
  "email.suppressed",
  "contact.created",
  ...AUDIENCE_EVENTS,
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
export const EVENT_TYPES: ReadonlySet<ActivityType> = new Set([...EMAIL_EVENTS, ...AUDIENCE_EVENTS, "event"])

export const isActivityType = (value: string): value is ActivityType => (ACTIVITY_TYPES as ReadonlyArray<string>).includes(value)
