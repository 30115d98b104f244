/** The slice of mailauth's API the service and the tests use (the package ships no types). */
declare module "mailauth" {
  export interface AuthStatus {
    readonly result: string
    readonly comment?: string
  }
  export interface DkimResult {
    readonly signingDomain: string
    readonly selector: string
    readonly status: AuthStatus & { readonly aligned?: string | false }
    readonly signingHeaders?: { readonly keys: string }
  }
  /** Answers like node:dns `resolve(name, rrtype)`: TXT as arrays of strings, MX as `{ exchange, priority }`. */
  export type Resolver = (name: string, type: string) => Promise<unknown>
  export function authenticate(
    message: string | Buffer,
    options: {
      readonly ip?: string
      readonly helo?: string
      readonly sender?: string
      readonly mta?: string
      readonly trustReceived?: boolean
      readonly disableArc?: boolean
      readonly disableBimi?: boolean
      readonly resolver?: Resolver
    }
  ): Promise<{
    readonly dkim: { readonly results: ReadonlyArray<DkimResult> }
    readonly spf: { readonly status: AuthStatus; readonly domain?: string } | false
    readonly dmarc: { readonly status: AuthStatus; readonly domain?: string; readonly policy?: string } | false
    readonly headers: string
  }>
}
