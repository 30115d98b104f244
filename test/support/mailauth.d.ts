/** The slice of mailauth's API the tests use (the package ships no types). */
declare module "mailauth" {
  export interface DkimResult {
    readonly signingDomain: string
    readonly selector: string
    readonly status: { readonly result: string; readonly comment?: string }
    readonly signingHeaders?: { readonly keys: string }
  }
  export function authenticate(
    message: string | Buffer,
    options: {
      readonly ip?: string
      readonly helo?: string
      readonly sender?: string
      readonly trustReceived?: boolean
      readonly resolver?: (name: string, type: string) => Promise<unknown>
    }
  ): Promise<{ readonly dkim: { readonly results: ReadonlyArray<DkimResult> } }>
}
