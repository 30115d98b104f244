/**
 * How this installation delivers mail, said where it matters: under local delivery (no SMTP_URL) nothing
 * leaves the machine, sender domains need no verification and the Emails page is where mail is read;
 * with a relay the sender's domain must be verified, and the forms say where to do that.
 */
import { Link } from "react-router"
import { useDelivery } from "../api/session.ts"

/** Shown on every project page while mail is delivered locally. */
export function LocalDeliveryBanner({ projectId }: { readonly projectId: string }) {
  const delivery = useDelivery()
  if (delivery?.mode !== "local") return null
  return (
    <p data-testid="local-delivery" className="mb-6 rounded-md border border-sky-200 bg-sky-50 px-4 py-2 text-sm text-sky-900">
      <strong className="font-semibold">Local delivery.</strong> No SMTP relay is configured, so no mail leaves this
      machine and any sender address works without a verified domain. Read what was sent on the{" "}
      <Link className="link" to={`/p/${projectId}/emails`}>Emails</Link> page.
    </p>
  )
}

/** The hint under a From field: which sender addresses are accepted here. */
export function SenderHint({ projectId }: { readonly projectId: string }) {
  const delivery = useDelivery()
  if (delivery && !delivery.verifiedDomainRequired) return <>Any address: under local delivery no domain needs verifying</>
  return <>An address at a <Link className="link" to={`/p/${projectId}/domains`}>verified domain</Link></>
}

/** On the Domains page: what verifying means under the current delivery. */
export function DomainsDeliveryNote() {
  const delivery = useDelivery()
  if (delivery?.mode !== "local") return null
  return (
    <p data-testid="domains-local-delivery" className="mb-6 rounded-md border border-sky-200 bg-sky-50 px-4 py-3 text-sm text-sky-900">
      Mail is delivered locally (no <code>SMTP_URL</code>): nothing is sent out, so sending does not need a verified domain
      yet. Once a relay is configured, mail is sent only from domains verified here.
    </p>
  )
}
