/** Sending metrics, on the worker's /metrics with the others. */
import { counter } from "../observability/Metrics.ts"

export const MailMetrics = {
  sent: counter("mailstream_emails_sent_total", "Emails the SMTP relay (or the file outbox) accepted"),
  sendFailures: counter(
    "mailstream_email_send_failures_total",
    "Failed send attempts: outcome=retry (transient, tried again later) or failed (the email is FAILED: refused for good, unverified sender domain, or out of tries)",
    ["outcome"]
  )
}
