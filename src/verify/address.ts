/**
 * What can be told from the address alone, without the network: syntax (validator's isEmail, a TLD
 * required, the domain IDNA-normalised to its ASCII form), the domain lists, a likely typo of a popular
 * domain, and plus-addressing. Total over strings: never throws, whatever the input.
 */
import emailSpellChecker from "@zootools/email-spell-checker"
import { domainToASCII } from "node:url"
import validator from "validator"
import { MAX_EMAIL_LENGTH } from "../domain/email.ts"
import { commonProviders, isAliasDomain, isDisposableDomain, isPersonalDomain } from "./lists.ts"

export type AddressCheck =
  | {
    readonly syntaxValid: false
    /** The input, trimmed (and cut to 320 characters). */
    readonly email: string
    readonly reason: string
  }
  | {
    readonly syntaxValid: true
    /** Lower case, the domain in ASCII (`xn--` labels for IDNs). */
    readonly email: string
    readonly local: string
    readonly domain: string
    readonly isDisposable: boolean
    readonly isAlias: boolean
    readonly isPersonalEmail: boolean
    readonly isPlusAddressed: boolean
    readonly suggestedEmail: string | undefined
    /** Plain words for the flags that count against the address (disposable, alias, typo). */
    readonly reasons: ReadonlyArray<string>
  }

/** Longer inputs are not looked at further (an address has at most 254 characters, IDNs a few more before conversion). */
const MAX_INPUT_LENGTH = 1024
const MAX_LOCAL_LENGTH = 64

const invalid = (email: string, reason: string): AddressCheck => ({ syntaxValid: false, email: email.slice(0, 320), reason })

/** Why `local@domain` (domain already ASCII) fails isEmail, in plain words. */
const syntaxProblem = (local: string, domain: string): string => {
  if (Buffer.byteLength(local) > MAX_LOCAL_LENGTH) return `The part before the @ is longer than ${MAX_LOCAL_LENGTH} characters.`
  if (local.length + 1 + domain.length > MAX_EMAIL_LENGTH) return `The address is longer than ${MAX_EMAIL_LENGTH} characters.`
  if (!validator.isFQDN(domain, { require_tld: true })) return `The domain "${domain}" is not a valid domain name with a top-level domain.`
  return "The part before the @ contains characters or dots an email address cannot have."
}

/** `user+tag@`: mail to it reaches `user@` at most providers. */
export const isPlusAddressed = (local: string): boolean => {
  const plus = local.indexOf("+")
  return plus > 0 && plus < local.length - 1
}

/**
 * Typo targets: the checker's popular domains and the common providers. Its corrections of a
 * second-level name or a TLD alone are off: they turn real domains into others (`.pt` → `.it`,
 * `.lu` → `.ru`, `gmail.test` → `mail.test`), so only whole domains close to a popular one count.
 */
const TYPO_TARGETS = [...new Set([...emailSpellChecker.POPULAR_DOMAINS, ...commonProviders])]

/** Names this short are two edits away from too many others (`x.de` from `gmx.de`). */
const MIN_TYPO_LABEL = 4

/**
 * `user@gmial.com` → `user@gmail.com`. Nothing for domains on the providers list or alias services:
 * they are real, and many sit two edits from a bigger one (hotmail.de, live.ca, email.com, mail.ee).
 * Typo-squatting domains that the disposable list names (gmial.com) are still reported.
 */
export const suggestCorrection = (local: string, domain: string): string | undefined => {
  if (isPersonalDomain(domain) || isAliasDomain(domain)) return undefined
  if (domain.indexOf(".") < MIN_TYPO_LABEL) return undefined
  try {
    const suggestion = emailSpellChecker.run({
      email: `${local}@${domain}`,
      domains: TYPO_TARGETS,
      secondLevelDomains: [],
      topLevelDomains: []
    })
    // The library's `full` is URI-encoded; keep the local part as given.
    return suggestion && suggestion.domain !== domain ? `${local}@${suggestion.domain}` : undefined
  } catch {
    return undefined
  }
}

export const checkAddress = (input: string): AddressCheck => {
  const trimmed = input.trim()
  if (trimmed === "") return invalid(trimmed, "The address is empty.")
  if (!trimmed.isWellFormed()) return invalid(trimmed, "The address contains broken characters (unpaired UTF-16 surrogates).")
  if (trimmed.length > MAX_INPUT_LENGTH) return invalid(trimmed, `The address is longer than ${MAX_EMAIL_LENGTH} characters.`)
  const at = trimmed.lastIndexOf("@")
  if (at < 0) return invalid(trimmed, "The address has no @.")
  const local = trimmed.slice(0, at).toLowerCase()
  const rawDomain = trimmed.slice(at + 1)
  if (local === "") return invalid(trimmed, "The address has nothing before the @.")
  if (rawDomain === "") return invalid(trimmed, "The address has no domain after the @.")
  // IDNA (UTS #46): `Bücher.de` → `xn--bcher-kva.de`; "" when it is no valid domain name at all.
  const domain = domainToASCII(rawDomain.toLowerCase())
  if (domain === "") return invalid(trimmed, `The domain "${rawDomain}" is not a valid domain name.`)
  const email = `${local}@${domain}`
  if (!validator.isEmail(email, { require_tld: true, allow_ip_domain: false, allow_display_name: false })) {
    return invalid(trimmed, syntaxProblem(local, domain))
  }

  const isDisposable = isDisposableDomain(domain)
  const isAlias = isAliasDomain(domain)
  const suggestedEmail = suggestCorrection(local, domain)
  const reasons: Array<string> = []
  if (isDisposable) reasons.push(`${domain} is a disposable (throw-away) email domain.`)
  if (isAlias) reasons.push(`${domain} is an alias / relay service: mail is forwarded to a mailbox the address does not reveal.`)
  if (suggestedEmail) reasons.push(`The domain looks like a typo: did you mean ${suggestedEmail}?`)
  return {
    syntaxValid: true,
    email,
    local,
    domain,
    isDisposable,
    isAlias,
    isPersonalEmail: isPersonalDomain(domain),
    isPlusAddressed: isPlusAddressed(local),
    suggestedEmail,
    reasons
  }
}
