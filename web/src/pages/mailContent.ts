/** The content fields a template and a campaign share, as their editors hold them and as the API takes them. */
export interface MailContentDraft {
  readonly name: string
  readonly subject: string
  readonly body: string
  readonly from: string
  readonly fromName: string
  readonly replyTo: string
}

/** What the API takes: empty optional fields are null. */
export const mailContentPayload = (draft: MailContentDraft) => ({
  name: draft.name,
  subject: draft.subject,
  body: draft.body,
  from: draft.from,
  fromName: draft.fromName === "" ? null : draft.fromName,
  replyTo: draft.replyTo === "" ? null : draft.replyTo
})
