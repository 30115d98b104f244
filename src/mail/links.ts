/**
 * Signed links placed in mail: subscription pages per contact, the open pixel and click redirects per
 * email. Each carries an HMAC under the project's link secret, so a link can neither be forged for
 * another contact nor turned into an open redirect: a click goes only where the mail pointed.
 */
import { createHmac, timingSafeEqual } from "node:crypto"

const sign = (secret: string, purpose: string, ...parts: ReadonlyArray<string>): string =>
  createHmac("sha256", secret).update([purpose, ...parts].join("\n")).digest("base64url").slice(0, 32)

export const verifySignature = (expected: string, presented: string): boolean => {
  const a = Buffer.from(expected)
  const b = Buffer.from(presented)
  return a.length === b.length && timingSafeEqual(a, b)
}

export type ContactPage = "unsubscribe" | "subscribe" | "manage"

/** `<contactId>.<signature>`: the token of a contact's subscription pages (one for all three). */
export const contactToken = (secret: string, contactId: string): string => `${contactId}.${sign(secret, "contact", contactId)}`

export const parseContactToken = (token: string): { readonly contactId: string; readonly signature: string } | undefined => {
  const [contactId, signature, ...rest] = token.split(".")
  return contactId && signature && rest.length === 0 ? { contactId, signature } : undefined
}

export const contactSignatureValid = (secret: string, contactId: string, signature: string): boolean =>
  verifySignature(sign(secret, "contact", contactId), signature)

/**
 * A contact's subscription pages. With `emailId` (the email the links are placed in), the unsubscribe
 * and manage links name it (`?e=`), so an unsubscribe made from them is counted for that email's
 * campaign. Advisory only: the page checks that the email is the contact's before counting.
 */
export const contactLinks = (publicUrl: string, secret: string, contactId: string, emailId?: string) => {
  const token = contactToken(secret, contactId)
  const source = emailId === undefined ? "" : `?e=${emailId}`
  return {
    unsubscribeUrl: `${publicUrl}/unsubscribe/${token}${source}`,
    subscribeUrl: `${publicUrl}/subscribe/${token}`,
    manageUrl: `${publicUrl}/manage/${token}${source}`
  }
}

export const openSignature = (secret: string, emailId: string) => sign(secret, "open", emailId)
export const clickSignature = (secret: string, emailId: string, url: string) => sign(secret, "click", emailId, url)

export const openPixelUrl = (publicUrl: string, secret: string, emailId: string) =>
  `${publicUrl}/t/o/${emailId}/${openSignature(secret, emailId)}.gif`

export const clickUrl = (publicUrl: string, secret: string, emailId: string, url: string) =>
  `${publicUrl}/t/c/${emailId}/${clickSignature(secret, emailId, url)}?u=${encodeURIComponent(url)}`

const decodeAttribute = (value: string) =>
  value.replace(/&amp;/g, "&").replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&lt;/g, "<").replace(/&gt;/g, ">")

const encodeAttribute = (value: string) => value.replace(/&/g, "&amp;").replace(/"/g, "&quot;")

/**
 * Rewrites a mail's http(s) links into signed click redirects and appends the open pixel. Links to
 * our own pages (unsubscribe, manage), `mailto:`, `tel:` and anchors are left as they are.
 */
export const addTracking = (
  html: string,
  options: { readonly publicUrl: string; readonly secret: string; readonly emailId: string }
): string => {
  const rewritten = html.replace(/(<a\b[^>]*?\bhref\s*=\s*)(?:"([^"]*)"|'([^']*)')/gi, (whole, head: string, dq?: string, sq?: string) => {
    const target = decodeAttribute((dq ?? sq ?? "").trim())
    if (!/^https?:\/\//i.test(target) || target.startsWith(`${options.publicUrl}/`)) return whole
    return `${head}"${encodeAttribute(clickUrl(options.publicUrl, options.secret, options.emailId, target))}"`
  })
  const pixel = `<img src="${encodeAttribute(openPixelUrl(options.publicUrl, options.secret, options.emailId))}" ` +
    `width="1" height="1" alt="" style="display:none" />`
  return /<\/body>/i.test(rewritten) ? rewritten.replace(/<\/body>/i, `${pixel}</body>`) : rewritten + pixel
}

/**
 * The inverse of addTracking for one email, for reading it in the dashboard: its open pixel removed and
 * its click redirects pointing where they lead again, so looking at the mail counts neither.
 */
export const removeTracking = (html: string, emailId: string): string => {
  const id = emailId.replace(/[^0-9a-f-]/gi, "")
  const pixel = new RegExp(`<img src="[^"]*/t/o/${id}/[A-Za-z0-9_-]+\\.gif" width="1" height="1" alt="" style="display:none" />`, "g")
  const click = new RegExp(`"[^"]*/t/c/${id}/[A-Za-z0-9_-]+\\?u=([^"]*)"`, "g")
  return html.replace(pixel, "").replace(click, (_, target: string) => {
    try {
      return `"${encodeAttribute(decodeURIComponent(decodeAttribute(target)))}"`
    } catch {
      return `"${target}"`
    }
  })
}
