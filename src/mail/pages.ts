/**
 * The small plain-HTML pages behind subscription links, in the contact's language (src/mail/locales.ts).
 * No scripts, no external resources.
 */
import { type Locale, pageStrings } from "./locales.ts"

const escape = (text: string) => text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;")

const page = (locale: Locale, title: string, body: string) =>
  `<!doctype html>
<html lang="${locale}"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex"><title>${escape(title)}</title>
<style>body{font-family:system-ui,sans-serif;max-width:32rem;margin:4rem auto;padding:0 1rem;color:#222}
button{font:inherit;padding:.5rem 1rem;margin:.25rem .5rem .25rem 0;cursor:pointer}</style></head>
<body><h1>${escape(title)}</h1>${body}</body></html>`

const form = (action: string, label: string) =>
  `<form method="post" action="${escape(action)}"><button type="submit">${escape(label)}</button></form>`

const strong = (email: string) => `<strong>${escape(email)}</strong>`

export interface PageLinks {
  readonly unsubscribeUrl: string
  readonly subscribeUrl: string
}

/**
 * GET pages only ask: link scanners and prefetchers follow GETs, so the change itself is a POST
 * (the button, or a mail client's RFC 8058 one-click request).
 */
export const confirmUnsubscribePage = (locale: Locale, email: string, links: PageLinks) => {
  const text = pageStrings(locale)
  return page(
    locale,
    text.unsubscribeTitle,
    `<p>${text.unsubscribeQuestion(strong(email))}</p>${form(links.unsubscribeUrl, text.unsubscribeButton)}`
  )
}

export const confirmSubscribePage = (locale: Locale, email: string, links: PageLinks) => {
  const text = pageStrings(locale)
  return page(
    locale,
    text.subscribeTitle,
    `<p>${text.subscribeQuestion(strong(email))}</p>${form(links.subscribeUrl, text.subscribeButton)}`
  )
}

export const managePage = (locale: Locale, email: string, subscribed: boolean, links: PageLinks) => {
  const text = pageStrings(locale)
  return page(
    locale,
    text.manageTitle,
    `<p>${subscribed ? text.currentlySubscribed(strong(email)) : text.currentlyUnsubscribed(strong(email))}</p>` +
      (subscribed ? form(links.unsubscribeUrl, text.unsubscribeButton) : form(links.subscribeUrl, text.subscribeButton))
  )
}

export const donePage = (locale: Locale, email: string, subscribed: boolean, links: PageLinks & { readonly manageUrl: string }) => {
  const text = pageStrings(locale)
  return page(
    locale,
    subscribed ? text.subscribedTitle : text.unsubscribedTitle,
    `<p>${subscribed ? text.willReceive(strong(email)) : text.willNoLongerReceive(strong(email))}</p>` +
      (subscribed ? form(links.unsubscribeUrl, text.unsubscribeAgain) : form(links.subscribeUrl, text.subscribeAgain))
  )
}

/** A validly signed unsubscribe link of a contact deleted since: nothing to unsubscribe, which is no error to them. */
export const nothingToUnsubscribePage = (locale: Locale) => {
  const text = pageStrings(locale)
  return page(locale, text.unsubscribedTitle, `<p>${escape(text.notOnList)}</p>`)
}

export const invalidLinkPage = (locale: Locale) => {
  const text = pageStrings(locale)
  return page(locale, text.invalidLinkTitle, `<p>${escape(text.invalidLink)}</p>`)
}
