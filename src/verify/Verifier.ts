/**
 * POST /v1/verify's work: the address checks (address.ts), then, for a syntactically valid address,
 * its domain's DNS facts (domain.ts), cached per domain for a few minutes (concurrent requests for one
 * domain share one set of lookups). An address that fails syntax makes no DNS query.
 */
import { Cache, Context, Duration, Effect, Exit, Layer } from "effect"
import { Dns } from "../lib/dns.ts"
import { checkAddress } from "./address.ts"
import { type DomainFacts, lookupDomain } from "./domain.ts"

export interface Verification {
  readonly email: string
  /** Syntactically valid, not disposable, and its domain exists and can receive mail. */
  readonly valid: boolean
  readonly isDisposable: boolean
  readonly isAlias: boolean
  readonly isTypo: boolean
  readonly isPlusAddressed: boolean
  readonly isPersonalEmail: boolean
  readonly domainExists: boolean
  readonly hasWebsite: boolean
  readonly hasMxRecords: boolean
  readonly reasons: ReadonlyArray<string>
  /** Only when `isTypo`. */
  readonly suggestedEmail?: string
}

export interface VerifierOptions {
  /** How long a domain's complete answers are kept. Default 5 minutes. */
  readonly cacheTtl?: Duration.Input
  /** How long answers with a lookup that went unanswered are kept. Default 30 s. */
  readonly failureTtl?: Duration.Input
  /** Domains kept at most (least recently used go first). Default 50,000. */
  readonly capacity?: number
}

export class Verifier extends Context.Service<Verifier, {
  readonly verify: (email: string) => Effect.Effect<Verification>
}>()("app/verify/Verifier") {
  static readonly make = Effect.fnUntraced(function*(options: VerifierOptions = {}) {
    const dns = yield* Dns
    const domains = yield* Cache.makeWith((domain: string) => lookupDomain(dns, domain), {
      capacity: options.capacity ?? 50_000,
      timeToLive: (exit: Exit.Exit<DomainFacts>) =>
        Exit.isSuccess(exit) && !exit.value.incomplete ? options.cacheTtl ?? "5 minutes" : options.failureTtl ?? "30 seconds"
    })

    const verify = Effect.fn("Verifier.verify")(function*(input: string) {
      const address = checkAddress(input)
      if (!address.syntaxValid) {
        return {
          email: address.email,
          valid: false,
          isDisposable: false,
          isAlias: false,
          isTypo: false,
          isPlusAddressed: false,
          isPersonalEmail: false,
          domainExists: false,
          hasWebsite: false,
          hasMxRecords: false,
          reasons: [address.reason, "The domain was not looked up because the address is not valid."]
        } satisfies Verification
      }
      const facts = yield* Cache.get(domains, address.domain)
      const valid = !address.isDisposable && facts.domainExists && facts.hasMxRecords
      return {
        email: address.email,
        valid,
        isDisposable: address.isDisposable,
        isAlias: address.isAlias,
        isTypo: address.suggestedEmail !== undefined,
        isPlusAddressed: address.isPlusAddressed,
        isPersonalEmail: address.isPersonalEmail,
        domainExists: facts.domainExists,
        hasWebsite: facts.hasWebsite,
        hasMxRecords: facts.hasMxRecords,
        reasons: [...address.reasons, ...facts.reasons],
        ...(address.suggestedEmail === undefined ? {} : { suggestedEmail: address.suggestedEmail })
      } satisfies Verification
    })

    return Verifier.of({ verify })
  })

  /** Over the resolvers of DNS_SERVERS (AppConfig). */
  static readonly layer = Layer.effect(Verifier, Verifier.make()).pipe(Layer.provide(Dns.layer))
}
