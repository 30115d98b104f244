/**
 * What a configuration variable is (its name, default, meaning and the rule for its value) and the
 * rules the variables are written with: whole numbers in a range, URLs, lists, addresses, booleans.
 * Kept apart from the variables themselves (serviceVariables.ts, featureVariables.ts) and from
 * src/config.ts, which reads them at start and renders them for `--help`.
 */
import { LogLevel, Option } from "effect"
import { isIP } from "node:net"
import { cidrMatcher } from "../domain/addresses.ts"

/** What a variable accepts: described for people, parsed for the program. */
export interface Rule<A> {
  /** Completes "expected …": `a whole number from 1 to 1024`. */
  readonly allowed: string
  readonly parse: (text: string) => Option.Option<A>
}

/** One environment variable. An empty value counts as unset. */
export interface Variable<A> extends Rule<A> {
  readonly name: string
  readonly meaning: string
  readonly defaultValue: A
  /** The default as people read it (`unset`, `http://localhost:$PORT`). */
  readonly shownDefault: string
  /** The value may hold a password: error messages mask it. */
  readonly secret?: boolean
}

export const variable = <A>(spec: Variable<A>): Variable<A> => spec

export const optional = <A>(rule: Rule<A>): Rule<A | undefined> => rule

export const wholeNumber = (min: number, max?: number): Rule<number> => ({
  allowed: max === undefined ? `a whole number of at least ${min}` : `a whole number from ${min} to ${max}`,
  parse: (text) => {
    const value = Number(text)
    return /^-?\d+$/.test(text) && value >= min && (max === undefined || value <= max) ? Option.some(value) : Option.none()
  }
})

export const anyWholeNumber: Rule<number> = {
  allowed: "a whole number (negative allowed)",
  parse: (text) => /^-?\d+$/.test(text) && Number.isSafeInteger(Number(text)) ? Option.some(Number(text)) : Option.none()
}

export const number = (min: number, options: { readonly exclusive: boolean }): Rule<number> => ({
  allowed: options.exclusive ? `a number greater than ${min}` : `a number of at least ${min}`,
  parse: (text) => {
    const value = Number(text)
    return /^\d+(\.\d+)?$/.test(text) && (options.exclusive ? value > min : value >= min) ? Option.some(value) : Option.none()
  }
})

export const powerOfTwo = (min: number, max: number): Rule<number> => ({
  allowed: `a power of two from ${min} to ${max}`,
  parse: (text) => {
    const value = Number(text)
    return /^\d+$/.test(text) && value >= min && value <= max && (value & (value - 1)) === 0 ? Option.some(value) : Option.none()
  }
})

export const logLevel: Rule<LogLevel.LogLevel> = {
  allowed: `one of ${LogLevel.values.join(", ")} (any case)`,
  parse: (text) => Option.fromNullishOr(LogLevel.values.find((level) => level.toLowerCase() === text.toLowerCase()))
}

/** An absolute URL with one of `schemes`, without a trailing slash. */
export const url = (schemes: ReadonlyArray<string>): Rule<string> => ({
  allowed: `a ${schemes.map((scheme) => `${scheme}://`).join(" or ")} URL`,
  parse: (text) => {
    if (!URL.canParse(text)) return Option.none()
    const parsed = new URL(text)
    return schemes.includes(parsed.protocol.slice(0, -1)) && parsed.hostname !== "" ? Option.some(text.replace(/\/+$/, "")) : Option.none()
  }
})

export const text = (allowed: string, pattern: RegExp = /\S/): Rule<string> => ({
  allowed,
  parse: (value) => pattern.test(value) ? Option.some(value) : Option.none()
})

/** Comma-separated items, each checked by `item` (blanks between commas ignored). */
export const listOf = (allowed: string, item: (text: string) => boolean): Rule<ReadonlyArray<string>> => ({
  allowed,
  parse: (value) => {
    const items = value.split(",").map((entry) => entry.trim()).filter((entry) => entry !== "")
    return items.every(item) ? Option.some(items) : Option.none()
  }
})

export const port = (text: string | undefined) => text === undefined || (/^\d+$/.test(text) && Number(text) <= 65535)

/** `host[:port]` or `scheme://host[:port]` with a NATS scheme, as the NATS client takes them. */
export const isNatsServer = (entry: string) => {
  const withScheme = entry.includes("://") ? entry : `nats://${entry}`
  return URL.canParse(withScheme) && ["nats:", "tls:", "ws:", "wss:"].includes(new URL(withScheme).protocol) &&
    new URL(withScheme).hostname !== ""
}

/** `ip`, `ip:port`, `[ipv6]` or `[ipv6]:port`: what node:dns `setServers` accepts. */
export const isResolver = (entry: string) => {
  const bracketed = entry.match(/^\[([^\]]+)\](?::(\d+))?$/)
  if (bracketed) return isIP(bracketed[1]!) === 6 && port(bracketed[2])
  if (isIP(entry) !== 0) return true
  const [host, portText] = entry.split(":")
  return isIP(host ?? "") === 4 && port(portText)
}

/** A range in CIDR notation, or one address: whatever workflow webhooks' matcher accepts. */
export const isRange = (entry: string) => {
  try {
    cidrMatcher([entry])
    return true
  } catch {
    return false
  }
}

export const boolean: Rule<boolean> = {
  allowed: "true or false",
  parse: (text) => /^(true|false)$/i.test(text) ? Option.some(text.toLowerCase() === "true") : Option.none()
}

/** `address@domain` or `Name <address@domain>`, as a From header takes it. */
export const mailbox = text(
  "an email address, optionally as `Name <address@domain>`",
  /^(?:[^<>]*<[^\s@<>]+@[^\s@<>]+>|[^\s@<>]+@[^\s@<>]+)$/
)

export const isSnsTopic = (entry: string) => /^arn:[^:\s]+:sns:[^:\s]*:[^:\s]*:[^:\s]+$/.test(entry)

export const DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/postgres"
