/**
 * The extra headers of a message: what we add (bulk-mail markers, RFC 8058 one-click unsubscribe) and
 * what the sender asked for (/v1/send `headers`), merged by name without regard to case.
 */

/**
 * Marks bulk mail (every campaign, and marketing mail wherever it comes from) so that receivers hold
 * back automatic replies instead of sending them to the From address: `Precedence: bulk` (the de facto
 * signal), `Auto-Submitted: auto-generated` (RFC 3834) and, for Exchange and Outlook, out-of-office and
 * auto-replies only: `All` would also suppress their non-delivery reports, which bounce handling needs.
 */
export const BULK_HEADERS: Readonly<Record<string, string>> = {
  Precedence: "bulk",
  "Auto-Submitted": "auto-generated",
  "X-Auto-Response-Suppress": "OOF, AutoReply"
}

/** RFC 8058's pair: `List-Unsubscribe-Post` claims that the `List-Unsubscribe` URL takes an unattended POST. */
const ONE_CLICK_PAIR = new Set(["list-unsubscribe", "list-unsubscribe-post"])

export interface HeaderOptions {
  /** Campaign mail and marketing mail: add BULK_HEADERS. */
  readonly bulk: boolean
  /** Our one-click unsubscribe URL for the recipient, when the mail offers one (marketing, or the body links to it). */
  readonly unsubscribeUrl: string | undefined
  /** The sender's own headers (already checked: no CR/LF, none of those we must set ourselves). */
  readonly custom: Readonly<Record<string, string>>
}

/**
 * Ours first, then the sender's; a sender's header replaces ours of the same name (any case). The
 * one-click pair is one claim, so a sender who sets either member takes over both: their own
 * `List-Unsubscribe` alone drops our `List-Unsubscribe-Post` (we must not claim one-click for a URL
 * we do not know takes it), and a `List-Unsubscribe-Post` with no `List-Unsubscribe` is dropped too
 * (a one-click claim with no target).
 */
export const mailHeaders = (options: HeaderOptions): Record<string, string> => {
  const ours: Record<string, string> = options.bulk ? { ...BULK_HEADERS } : {}
  if (options.unsubscribeUrl !== undefined) {
    ours["List-Unsubscribe"] = `<${options.unsubscribeUrl}>`
    ours["List-Unsubscribe-Post"] = "List-Unsubscribe=One-Click"
  }
  const customNames = new Set(Object.keys(options.custom).map((name) => name.toLowerCase()))
  const senderOwnsPair = [...ONE_CLICK_PAIR].some((name) => customNames.has(name))
  const merged = new Map<string, readonly [string, string]>()
  for (const [name, value] of Object.entries(ours)) {
    if (!(senderOwnsPair && ONE_CLICK_PAIR.has(name.toLowerCase()))) merged.set(name.toLowerCase(), [name, value])
  }
  for (const [name, value] of Object.entries(options.custom)) merged.set(name.toLowerCase(), [name, value])
  if (merged.has("list-unsubscribe-post") && !merged.has("list-unsubscribe")) merged.delete("list-unsubscribe-post")
  return Object.fromEntries(merged.values())
}
