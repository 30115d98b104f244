/** Numbers and values as people read them: the noun agreeing with its number, data without JSON quoting. */
import { isReservedEventName } from "../../../src/domain/events.ts"

/** "1 contact", "2 contacts", "1,204 events": the number with its noun in the right number. */
export const countOf = (n: number, singular: string, plural = `${singular}s`): string =>
  `${n.toLocaleString()} ${n === 1 ? singular : plural}`

/** The noun alone, agreeing with `n` ("recipient" / "recipients"), for a number shown apart from it. */
export const nounFor = (n: number, singular: string, plural = `${singular}s`): string => (n === 1 ? singular : plural)

const isScalar = (value: unknown) => value === null || typeof value !== "object"

/**
 * A custom-data value in a table cell or a line of text: text as it is (a type column or label says it
 * is text), numbers and true/false as written, a list of plain values joined by commas, anything
 * else as compact JSON.
 */
export const displayValue = (value: unknown): string =>
  typeof value === "string"
    ? (value === "" ? "(empty text)" : value)
    : Array.isArray(value) && value.every(isScalar)
    ? value.map(displayValue).join(", ")
    : JSON.stringify(value) ?? String(value)

type Data = Readonly<Record<string, unknown>>

/** The data without the service's ids (`emailId`, `campaignId`): they name nothing a person reads. */
export const withoutIds = (data: Data): Data => Object.fromEntries(Object.entries(data).filter(([key]) => !key.endsWith("Id")))

/** What a line shows of an event's data: an application's own event all of it, the service's own (email.sent, ...) without ids. */
export const readableEventData = (name: string, data: Data): Data => (isReservedEventName(name) ? withoutIds(data) : data)
