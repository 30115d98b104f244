/**
 * Domain lists: disposable (disposable-email-domains-js), personal / free providers (email-providers,
 * minus the disposable ones) and alias / relay services (kept here: no maintained package lists them).
 * Disposable and alias domains also match their subdomains (`x.mozmail.com`, `user.anonaddy.com`).
 */
import { disposableEmailBlocklistSet } from "disposable-email-domains-js"
import { createRequire } from "node:module"

// The package is JSON lists without type declarations: all.json (~8,700 domains), common.json (the ~350 most used).
const require = createRequire(import.meta.url)
const providers = require("email-providers/all.json") as ReadonlyArray<string>

const disposable: ReadonlySet<string> = disposableEmailBlocklistSet()

const personal: ReadonlySet<string> = new Set(providers.filter((domain) => !disposable.has(domain)))

/** The most used personal providers: what a typo is most likely a typo of. */
export const commonProviders: ReadonlyArray<string> = (require("email-providers/common.json") as ReadonlyArray<string>)
  .filter((domain) => !disposable.has(domain))

/** Services that forward to a hidden real mailbox: the address works, but is not the person's own. */
export const ALIAS_DOMAINS: ReadonlySet<string> = new Set([
  "privaterelay.appleid.com", // Apple Hide My Email
  "mozmail.com", // Firefox Relay
  "relay.firefox.com",
  "simplelogin.com", // SimpleLogin
  "simplelogin.co",
  "simplelogin.fr",
  "aleeas.com",
  "slmail.me",
  "slmails.com",
  "silomails.com",
  "8alias.com",
  "8shield.net",
  "dralias.com",
  "addy.io", // addy.io, formerly AnonAddy
  "anonaddy.com",
  "anonaddy.me",
  "duck.com", // DuckDuckGo Email Protection
  "passmail.net", // Proton Pass
  "passmail.com",
  "passinbox.com",
  "passfwd.com",
  "33mail.com"
])

/** The domain itself or one of its parents (down to two labels) is in the set. */
const matchesWithParents = (set: ReadonlySet<string>, domain: string): boolean => {
  for (let name = domain;;) {
    if (set.has(name)) return true
    const dot = name.indexOf(".")
    if (dot < 0 || name.indexOf(".", dot + 1) < 0) return false
    name = name.slice(dot + 1)
  }
}

/** All of these take a lower-case ASCII domain (IDNs in their xn-- form). */
export const isDisposableDomain = (domain: string): boolean => matchesWithParents(disposable, domain)
export const isAliasDomain = (domain: string): boolean => matchesWithParents(ALIAS_DOMAINS, domain)
export const isPersonalDomain = (domain: string): boolean => personal.has(domain)
