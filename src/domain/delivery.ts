/**
 * How mail leaves this installation. Without SMTP_URL nothing is delivered: every message goes to the
 * file outbox on this machine ("local delivery"), so no sending domain needs to pass a DNS check, and
 * the dashboard's Emails page is where the mail is read. With a relay (SMTP, or SES through its SMTP
 * endpoint) the sender domain must be verified for the project, as the spec says.
 */
export type DeliveryMode = "local" | "smtp"

export const deliveryMode = (config: { readonly smtpUrl: unknown }): DeliveryMode => config.smtpUrl === undefined ? "local" : "smtp"

/** Whether saving templates and campaigns and sending mail needs the sender's domain verified. */
export const requiresVerifiedDomain = (config: { readonly smtpUrl: unknown }): boolean => deliveryMode(config) === "smtp"
