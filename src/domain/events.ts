/** Event names the service emits itself; applications cannot track them. */
const RESERVED = [
  /^email\./i,
  /^contact\.subscribed$/i,
  /^contact\.unsubscribed$/i,
  /^segment\.[^.]+\.(entry|exit)$/i
]

export const isReservedEventName = (name: string): boolean => RESERVED.some((pattern) => pattern.test(name.trim()))
