/**
 * A template rendered for the dashboard's preview: the renderer and variables mail is sent with (the
 * contact's data, their subscription links), for one of the project's contacts or a sample one.
 */
import { Effect, Result } from "effect"
import { AppConfig } from "../../config.ts"
import { isUuid } from "../../domain/ids.ts"
import { contactLinks } from "../../mail/links.ts"
import { makeRenderer, templateErrorMessage, templateVariables } from "../../mail/render.ts"
import { Contacts } from "../../store/Contacts.ts"
import { Projects } from "../../store/Projects.ts"
import { type FieldError } from "../errors.ts"
import { NotFound, ValidationFailed } from "../api/statusErrors.ts"

const renderer = makeRenderer()

/** Who a preview without a chosen contact is rendered for. */
const SAMPLE = { id: null, email: "jane@example.com", data: { firstName: "Jane" } }

/** A preview is for reading: the same caps as mail would be too generous to show, so a smaller one. */
const MAX_PREVIEW_CHARS = 2_000_000

export const makeTemplatePreview = Effect.gen(function*() {
  const contacts = yield* Contacts
  const projects = yield* Projects
  const config = yield* AppConfig

  const renderField = (field: string, source: string, kind: "html" | "text", variables: Record<string, unknown>) =>
    Effect.tryPromise({
      try: () => renderer.compile(source, kind).render(variables, MAX_PREVIEW_CHARS),
      catch: (error): FieldError => ({ field, message: templateErrorMessage(error), code: "invalid_template" })
    })

  return Effect.fnUntraced(function*(projectId: string, input: { subject: string; body: string; contactId?: string | undefined }) {
    const found = input.contactId === undefined
      ? SAMPLE
      : isUuid(input.contactId)
      ? yield* contacts.get(projectId, input.contactId)
      : undefined
    if (found === undefined) return yield* NotFound.of("Contact")
    const { linkSecret } = yield* projects.mailSettings(projectId)
    const variables = templateVariables({
      contact: { id: found.id ?? "sample", email: found.email, data: found.data },
      links: contactLinks(config.publicUrl, linkSecret, found.id ?? "sample")
    })
    // Both fields are rendered, so a subject and a body that both fail are reported together.
    const [subject, html] = yield* Effect.all([
      renderField("subject", input.subject, "text", variables),
      renderField("body", input.body, "html", variables)
    ], { mode: "result" })
    if (Result.isFailure(subject) || Result.isFailure(html)) {
      return yield* ValidationFailed.of([subject, html].flatMap((result) => Result.isFailure(result) ? [result.failure] : []))
    }
    return { subject: subject.success.replace(/[\r\n]+/g, " ").trim(), html: html.success, contact: { id: found.id, email: found.email } }
  })
})
