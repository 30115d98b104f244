/**
 * Turns content and a recipient into a queued email: renders subject and body for the contact, adds
 * open/click tracking when the project has it on, and the RFC 8058 one-click unsubscribe headers for
 * marketing mail and any mail that links to the unsubscribe page. Shared by every way mail is made
 * (/v1/send now; campaigns and workflow steps later).
 */
import { uuidv7 } from "../domain/ids.ts"
import type { Attachment, EmailType, NewEmail } from "../store/Emails.ts"
import { addTracking, contactLinks } from "./links.ts"
import { type CompiledTemplate, templateVariables } from "./render.ts"

export interface ProjectMailSettings {
  readonly projectId: string
  readonly linkSecret: string
  readonly trackingEnabled: boolean
  readonly publicUrl: string
}

export interface PreparedContent {
  readonly subject: CompiledTemplate
  readonly body: CompiledTemplate
  readonly from: string
  readonly fromName: string | null
  readonly replyTo: string | null
  readonly headers: Readonly<Record<string, string>>
  readonly attachments: ReadonlyArray<Attachment>
  readonly type: EmailType
  readonly templateId: string | null
  readonly campaignId?: string | null
  readonly workflowId?: string | null
}

export interface Recipient {
  readonly contactId: string
  readonly email: string
  readonly name: string | null
  readonly data: Readonly<Record<string, unknown>>
}

export const prepareEmail = async (
  settings: ProjectMailSettings,
  content: PreparedContent,
  recipient: Recipient,
  sendData: Readonly<Record<string, unknown>> | undefined
): Promise<NewEmail> => {
  const id = uuidv7()
  const links = contactLinks(settings.publicUrl, settings.linkSecret, recipient.contactId)
  const variables = templateVariables({
    contact: { id: recipient.contactId, email: recipient.email, data: recipient.data },
    sendData,
    links
  })
  // Subjects never span lines, whatever the data held.
  const subject = (await content.subject.render(variables)).replace(/[\r\n]+/g, " ").trim()
  let html = await content.body.render(variables)
  const linksToUnsubscribe = html.includes(links.unsubscribeUrl)
  if (settings.trackingEnabled) html = addTracking(html, { publicUrl: settings.publicUrl, secret: settings.linkSecret, emailId: id })
  const headers: Record<string, string> = { ...content.headers }
  if (content.type === "MARKETING" || linksToUnsubscribe) {
    headers["List-Unsubscribe"] = `<${links.unsubscribeUrl}>`
    headers["List-Unsubscribe-Post"] = "List-Unsubscribe=One-Click"
  }
  const domain = content.from.slice(content.from.lastIndexOf("@") + 1)
  return {
    id,
    projectId: settings.projectId,
    contactId: recipient.contactId,
    to: recipient.email,
    toName: recipient.name,
    from: content.from,
    fromName: content.fromName,
    replyTo: content.replyTo,
    subject,
    html,
    headers,
    attachments: content.attachments,
    type: content.type,
    templateId: content.templateId,
    campaignId: content.campaignId ?? null,
    workflowId: content.workflowId ?? null,
    messageId: `${id}@${domain}`
  }
}
