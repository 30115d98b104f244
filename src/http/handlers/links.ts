/**
 * Tracking and subscription links. Nothing here trusts the URL: a link's signature is checked under
 * its project's secret before anything is recorded or anyone is redirected.
 */
import { Effect } from "effect"
import { HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { SqlClient } from "effect/sql"
import { AppConfig } from "../../config.ts"
import { emptyPatch } from "../../domain/customData.ts"
import { isUuid } from "../../domain/ids.ts"
import { clickSignature, contactLinks, contactSignatureValid, openSignature, parseContactToken, verifySignature } from "../../mail/links.ts"
import { DEFAULT_LOCALE, resolveLocale } from "../../mail/locales.ts"
import {
  confirmSubscribePage,
  confirmUnsubscribePage,
  donePage,
  invalidLinkPage,
  managePage,
  nothingToUnsubscribePage
} from "../../mail/pages.ts"
import { Campaigns } from "../../store/Campaigns.ts"
import { Contacts } from "../../store/Contacts.ts"
import { Emails } from "../../store/Emails.ts"
import type { PersistenceError } from "../../store/PersistenceError.ts"
import { Projects } from "../../store/Projects.ts"
import { OutboxRelay } from "../../stream/OutboxRelay.ts"
import { Api } from "../api/Api.ts"
import { rendered } from "../errors.ts"

/** The smallest transparent GIF. */
const PIXEL = Buffer.from("R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7", "base64")
const pixel = () =>
  HttpServerResponse.uint8Array(PIXEL, {
    contentType: "image/gif",
    headers: { "cache-control": "no-store, max-age=0" }
  })

const html = (body: string, status = 200) =>
  HttpServerResponse.text(body, { status, contentType: "text/html; charset=utf-8", headers: { "cache-control": "no-store" } })

export const LinksHandlers = HttpApiBuilder.group(
  Api,
  "links",
  Effect.fnUntraced(function*(handlers) {
    const config = yield* AppConfig
    const sql = yield* SqlClient.SqlClient
    const campaigns = yield* Campaigns
    const emails = yield* Emails
    const contacts = yield* Contacts
    const projects = yield* Projects
    const relay = yield* OutboxRelay

    /** The email a tracking link names, when the link's signature is right for it. */
    const signedEmail = Effect.fnUntraced(function*(emailId: string, signature: string, expected: (secret: string) => string) {
      const email = yield* emails.byId(emailId)
      if (!email) return undefined
      const settings = yield* projects.mailSettings(email.projectId)
      return verifySignature(expected(settings.linkSecret), signature) ? email : undefined
    })

    /**
     * The contact a subscription link names, with its links, when the signature is right. `source` (the
     * link's `e`, the email it was sent in) is carried into the page's own links when it is an email id.
     */
    const signedContact = Effect.fnUntraced(function*(token: string, source?: string) {
      const parsed = parseContactToken(token)
      if (!parsed) return undefined
      const found = yield* contacts.locate(parsed.contactId)
      if (!found) return undefined
      const settings = yield* projects.mailSettings(found.projectId)
      if (!contactSignatureValid(settings.linkSecret, parsed.contactId, parsed.signature)) return undefined
      const emailId = source !== undefined && isUuid(source) ? source : undefined
      return { ...found, emailId, links: contactLinks(config.publicUrl, settings.linkSecret, parsed.contactId, emailId) }
    })

    /**
     * A link signed for a contact that no longer exists: its signature is checked under the secret of the
     * project it was mailed from (its emails outlive it), so a forged token still gets the invalid-link page.
     */
    const signedForDeletedContact = Effect.fnUntraced(function*(token: string) {
      const parsed = parseContactToken(token)
      if (!parsed) return false
      const projectId = yield* emails.projectOfContact(parsed.contactId)
      if (projectId === undefined) return false
      const settings = yield* projects.mailSettings(projectId)
      return contactSignatureValid(settings.linkSecret, parsed.contactId, parsed.signature)
    })

    /** The language of a contact's pages: their `locale` (spec: soft-reserved custom data). */
    const localeOf = (contact: { readonly data: Readonly<Record<string, unknown>> }) => resolveLocale(contact.data.locale)

    /** A link naming no contact we can read names no language either: its page is in English. */
    const invalidLink = () => html(invalidLinkPage(DEFAULT_LOCALE), 404)

    /** Nothing to unsubscribe is no error to the recipient: success for a deleted contact's valid link. */
    const unknownContact = (token: string) =>
      Effect.map(signedForDeletedContact(token), (valid) => (valid ? html(nothingToUnsubscribePage(DEFAULT_LOCALE)) : invalidLink()))

    const setSubscribed = (token: string, subscribed: boolean, source?: string) =>
      rendered(Effect.gen(function*() {
        const found = yield* signedContact(token, source)
        if (!found) return subscribed ? invalidLink() : yield* unknownContact(token)
        // Through the same path as PATCH /contacts: the change is pinned and contact.(un)subscribed emitted.
        // An unsubscribe from a campaign's mail counts for the campaign, in the same transaction (once).
        const updated = yield* sql.withTransaction(Effect.gen(function*() {
          if (!subscribed && found.emailId !== undefined)
            yield* campaigns.countUnsubscribe(found.projectId, found.contact.id, found.emailId)
          return yield* contacts.update(found.projectId, found.contact.id, { subscribed, patch: emptyPatch })
        })).pipe(
          // Only the subscription changes: no email to collide, no data to grow; either would be a defect.
          Effect.catchTags({ DuplicateEmail: Effect.die, ContactDataTooLarge: Effect.die })
        )
        yield* relay.wake
        const contact = updated && "email" in updated ? updated : found.contact
        return html(donePage(localeOf(contact), contact.email, subscribed, found.links))
      }))

    const showPage = (
      token: string,
      source: string | undefined,
      render: (found: NonNullable<Effect.Success<ReturnType<typeof signedContact>>>) => string,
      missing: (token: string) => Effect.Effect<HttpServerResponse.HttpServerResponse, PersistenceError> = () =>
        Effect.succeed(invalidLink())
    ) => rendered(Effect.flatMap(signedContact(token, source), (found) => (found ? Effect.succeed(html(render(found))) : missing(token))))

    return handlers
      .handle("open", ({ params }) =>
        rendered(Effect.gen(function*() {
          const signature = params.signature.replace(/\.gif$/, "")
          const email = yield* signedEmail(params.emailId, signature, (secret) => openSignature(secret, params.emailId))
          if (email) yield* emails.engage(email, "open")
          yield* relay.wake
          // Always the pixel: a broken image tells a forger nothing either.
          return pixel()
        })))
      .handle("click", ({ params, query }) =>
        rendered(Effect.gen(function*() {
          const target = query.u ?? ""
          const email = yield* signedEmail(params.emailId, params.signature, (secret) => clickSignature(secret, params.emailId, target))
          if (!email || !/^https?:\/\//i.test(target)) return invalidLink()
          yield* emails.engage(email, "click", { link: target })
          yield* relay.wake
          return HttpServerResponse.redirect(target, { status: 302, headers: { "cache-control": "no-store" } })
        })))
      .handle(
        "unsubscribePage",
        ({ params, query }) =>
          showPage(
            params.token,
            query.e,
            (found) => confirmUnsubscribePage(localeOf(found.contact), found.contact.email, found.links),
            unknownContact
          )
      )
      .handle("unsubscribe", ({ params, query }) => setSubscribed(params.token, false, query.e))
      .handle(
        "subscribePage",
        ({ params }) =>
          showPage(params.token, undefined, (found) => confirmSubscribePage(localeOf(found.contact), found.contact.email, found.links))
      )
      .handle("subscribe", ({ params }) => setSubscribed(params.token, true))
      .handle(
        "manage",
        ({ params, query }) =>
          showPage(
            params.token,
            query.e,
            (found) => managePage(localeOf(found.contact), found.contact.email, found.contact.subscribed, found.links)
          )
      )
  })
)
