/** The small plain-HTML pages behind subscription links. No scripts, no external resources. */

const escape = (text: string) =>
  text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;")

const page = (title: string, body: string) => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex"><title>${escape(title)}</title>
<style>body{font-family:system-ui,sans-serif;max-width:32rem;margin:4rem auto;padding:0 1rem;color:#222}
button{font:inherit;padding:.5rem 1rem;margin:.25rem .5rem .25rem 0;cursor:pointer}</style></head>
<body><h1>${escape(title)}</h1>${body}</body></html>`

const form = (action: string, label: string) =>
  `<form method="post" action="${escape(action)}"><button type="submit">${escape(label)}</button></form>`

export interface PageLinks {
  readonly unsubscribeUrl: string
  readonly subscribeUrl: string
}

/**
 * GET pages only ask: link scanners and prefetchers follow GETs, so the change itself is a POST
 * (the button, or a mail client's RFC 8058 one-click request).
 */
export const confirmUnsubscribePage = (email: string, links: PageLinks) =>
  page("Unsubscribe", `<p>Stop receiving marketing email at <strong>${escape(email)}</strong>?</p>${form(links.unsubscribeUrl, "Unsubscribe")}`)

export const confirmSubscribePage = (email: string, links: PageLinks) =>
  page("Subscribe", `<p>Receive email at <strong>${escape(email)}</strong>?</p>${form(links.subscribeUrl, "Subscribe")}`)

export const managePage = (email: string, subscribed: boolean, links: PageLinks) =>
  page(
    "Email preferences",
    `<p><strong>${escape(email)}</strong> is currently ${subscribed ? "subscribed" : "unsubscribed"}.</p>` +
      (subscribed ? form(links.unsubscribeUrl, "Unsubscribe") : form(links.subscribeUrl, "Subscribe"))
  )

export const donePage = (email: string, subscribed: boolean, links: PageLinks & { readonly manageUrl: string }) =>
  page(
    subscribed ? "You are subscribed" : "You are unsubscribed",
    `<p><strong>${escape(email)}</strong> ${subscribed ? "will receive" : "will no longer receive"} marketing email.</p>` +
      (subscribed ? form(links.unsubscribeUrl, "Unsubscribe again") : form(links.subscribeUrl, "Subscribe again"))
  )

/** A validly signed unsubscribe link of a contact deleted since: nothing to unsubscribe, which is no error to them. */
export const nothingToUnsubscribePage = () =>
  page("You are unsubscribed", "<p>This address is not on the list: it will receive no marketing email.</p>")

export const invalidLinkPage = () =>
  page("Link not valid", "<p>This link is not valid or has expired. Please use the link from your most recent email.</p>")
