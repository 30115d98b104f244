/** Event names the service emits itself; applications cannot track them. */
const RESERVED = [
  /^email\./i,
  /^contact\.subscribed$/i,
  /^contact\.unsubscribed$/i,
  /^segment\.[^.]+\.(entry|exit)$/i
]

export const isReservedEventName = (name: string): boolean => RESERVED.some((pattern) => pattern.test(name.trim()))

/** `segment.<slug>.entry`: the name lower-cased, runs of other characters than a-z0-9 as `-`. */
export const segmentSlug = (name: string): string => name.toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-+|-+$/g, "") || "segment"
