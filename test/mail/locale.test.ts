/**
 * The contact's `locale` (spec: soft-reserved custom data) over real HTTP and SMTP: the subscription
 * pages speak it (with `<html lang>`), a regional tag falls back to its language and anything unknown
 * to English, and a template reads `{{ locale }}`.
 */
import { describe, expect, it } from "vitest"
import { resolveLocale } from "../../src/mail/locales.ts"
import { type MailContext, withMailStack } from "../support/mail.ts"
import { eventually } from "../support/nats.ts"
import { request } from "../support/stack.ts"

let context: MailContext
withMailStack((ready) => (context = ready))

const secret = (method: string, path: string, body?: unknown) =>
  request(context.api.url, method, path, { key: context.project.secretKey, body })

/**
 * A subscribed contact with this `locale` (none when undefined), mailed a body that prints its locale and
 * its subscription links: what the mail said, and the links.
 */
const mailedContact = async (email: string, locale?: string) => {
  const created = await secret("POST", "/contacts", { email, subscribed: true, data: locale === undefined ? {} : { locale } })
  expect(created.status, created.text).toBeLessThan(300)
  const sent = await secret("POST", "/v1/send", {
    to: email,
    from: "hello@acme.test",
    subject: "Locale {{ locale }}",
    body: '<p id="locale">{{ locale }}</p><a href="{{ unsubscribeUrl }}">u</a> <a href="{{ manageUrl }}">m</a>'
  })
  expect(sent.status, sent.text).toBe(200)
  const emailId: string = sent.json.data.emails[0].email
  const mail = await eventually(async () => {
    const found = context.smtp.messages.find((m) => m.parsed.messageId?.startsWith(`<${emailId}@`))
    expect(found).toBeDefined()
    return found!
  })
  const html = String(mail.parsed.html)
  const [unsubscribeUrl, manageUrl] = [...html.matchAll(/href="([^"]+)"/g)].map((m) => m[1]!.replace(/&amp;/g, "&"))
  return {
    subject: mail.parsed.subject,
    printed: /<p id="locale">([^<]*)<\/p>/.exec(html)![1],
    unsubscribeUrl: unsubscribeUrl!,
    manageUrl: manageUrl!,
    subscribeUrl: unsubscribeUrl!.replace("/unsubscribe/", "/subscribe/").replace(/\?.*$/, "")
  }
}

const page = async (url: string, method = "GET") => {
  const res = await fetch(url, { method })
  expect(res.status).toBe(200)
  expect(res.headers.get("content-type")).toContain("text/html")
  const text = await res.text()
  return { text, lang: /<html lang="([^"]+)">/.exec(text)?.[1], title: /<h1>([^<]*)<\/h1>/.exec(text)?.[1] }
}

describe("locale resolution", () => {
  it("takes a tag's language when there is a table for it, English otherwise", () => {
    expect(["de", "DE", "de-AT", "de_CH", " fr-CA ", "es-419", "nl-BE", "pt-BR", "en-GB"].map(resolveLocale))
      .toEqual(["de", "de", "de", "de", "fr", "es", "nl", "pt", "en"])
    expect(["xx", "", "-de", "german", "constructor", "__proto__", undefined, null, 7, { de: true }].map(resolveLocale))
      .toEqual(Array(10).fill("en"))
  })
})

describe("subscription pages follow the contact's locale", () => {
  it("German: the unsubscribe question, its confirmation, the manage page and the subscribe page", async () => {
    const links = await mailedContact("anna@example.de", "de")
    const ask = await page(links.unsubscribeUrl)
    expect(ask.lang).toBe("de")
    expect(ask.title).toBe("Abmelden")
    expect(ask.text).toContain("<p>Keine Marketing-E-Mails mehr an <strong>anna@example.de</strong> erhalten?</p>")
    expect(ask.text).toContain('<button type="submit">Abmelden</button>')

    const manage = await page(links.manageUrl)
    expect(manage.lang).toBe("de")
    expect(manage.title).toBe("E-Mail-Einstellungen")
    expect(manage.text).toContain("<strong>anna@example.de</strong> ist derzeit angemeldet.")

    const done = await page(links.unsubscribeUrl, "POST")
    expect(done.lang).toBe("de")
    expect(done.title).toBe("Sie sind abgemeldet")
    expect(done.text).toContain("<strong>anna@example.de</strong> erhält keine Marketing-E-Mails mehr.")
    expect(done.text).toContain("Wieder anmelden</button>")

    const after = await page(links.manageUrl)
    expect(after.text).toContain("ist derzeit abgemeldet.")
    expect(after.text).toContain('<button type="submit">Anmelden</button>')
    expect((await page(links.subscribeUrl)).text).toContain("<p>E-Mails an <strong>anna@example.de</strong> erhalten?</p>")
    const resubscribed = await page(links.subscribeUrl, "POST")
    expect(resubscribed.title).toBe("Sie sind angemeldet")
  })

  it("French: the unsubscribe question, the manage page and the confirmation", async () => {
    const links = await mailedContact("jeanne@example.fr", "fr")
    const ask = await page(links.unsubscribeUrl)
    expect(ask.lang).toBe("fr")
    expect(ask.title).toBe("Se désabonner")
    expect(ask.text).toContain("<p>Ne plus recevoir d’e-mails marketing à l’adresse <strong>jeanne@example.fr</strong>\u00a0?</p>")

    const manage = await page(links.manageUrl)
    expect(manage.lang).toBe("fr")
    expect(manage.title).toBe("Préférences e-mail")
    expect(manage.text).toContain("L’adresse <strong>jeanne@example.fr</strong> est actuellement abonnée.")
    expect(manage.text).toContain('<button type="submit">Se désabonner</button>')

    const done = await page(links.unsubscribeUrl, "POST")
    expect(done.title).toBe("Désabonnement confirmé")
    expect(done.text).toContain("L’adresse <strong>jeanne@example.fr</strong> ne recevra plus d’e-mails marketing.")
  })

  it("de-AT falls back to German; an unknown locale and none at all get English", async () => {
    const austrian = await mailedContact("lukas@example.at", "de-AT")
    const german = await page(austrian.unsubscribeUrl)
    expect(german.lang).toBe("de")
    expect(german.title).toBe("Abmelden")

    for (const [email, locale] of [["nobody@example.xx", "xx"], ["plain@example.com", undefined]] as const) {
      const links = await mailedContact(email, locale)
      const ask = await page(links.unsubscribeUrl)
      expect(ask.lang).toBe("en")
      expect(ask.title).toBe("Unsubscribe")
      expect(ask.text).toContain(`<p>Stop receiving marketing email at <strong>${email}</strong>?</p>`)
      const manage = await page(links.manageUrl)
      expect(manage.lang).toBe("en")
      expect(manage.text).toContain(`<strong>${email}</strong> is currently subscribed.`)
    }
  })
})

describe("{{ locale }} in templates", () => {
  it("is the contact's locale as given through /v1/send, English without one", async () => {
    expect(await mailedContact("maria@example.es", "es-MX")).toMatchObject({ printed: "es-MX", subject: "Locale es-MX" })
    expect(await mailedContact("bob@example.org")).toMatchObject({ printed: "en", subject: "Locale en" })
  })

  it("renders in the template preview, for a contact of the project and for the sample contact", async () => {
    const created = await secret("POST", "/contacts", { email: "joao@example.pt", data: { locale: "pt-PT" } })
    const forContact = await secret("POST", "/templates/preview", {
      subject: "{{ locale }}",
      body: "<p>{{ locale }}</p>",
      contactId: created.json.id
    })
    expect(forContact.status, forContact.text).toBe(200)
    expect(forContact.json).toMatchObject({ subject: "pt-PT", html: "<p>pt-PT</p>" })
    const sample = await secret("POST", "/templates/preview", { subject: "{{ locale }}", body: "<p>{{ locale }}</p>" })
    expect(sample.json).toMatchObject({ subject: "en", html: "<p>en</p>" })
  })
})
