/**
 * Segments: the list with live member counts; a new segment (dynamic, built with the condition builder
 * while a live count and sample follow the edits, or static); one segment: its condition edited in
 * place, the membership tracking toggle, compute, static members added by email and removed, and the
 * members table.
 */
import { type FormEvent, useState } from "react"
import { Link, useNavigate, useParams } from "react-router"
import type { FieldError } from "../api/failure.ts"
import { useApiMutation, useApiQuery, useProjectId } from "../api/hooks.ts"
import { anyChange, segmentChange, useLiveRefresh } from "../api/live.tsx"
import { Confirm } from "../components/Confirm.tsx"
import { AudiencePreview } from "../components/conditions/AudiencePreview.tsx"
import { asCondition, ConditionBuilder, newCondition } from "../components/conditions/ConditionBuilder.tsx"
import { type Condition, sameTree } from "../components/conditions/model.ts"
import { Card, Field, MutationError, Notice } from "../components/Form.tsx"
import { Badge, cell, Fields, formatDate, Page, Section, Table, wideOnly } from "../components/Page.tsx"
import { NumberedPager } from "../components/Pager.tsx"
import { Empty, QueryView } from "../components/States.tsx"

const typeBadge = (type: string) => <Badge tone={type === "DYNAMIC" ? "indigo" : "slate"}>{type.toLowerCase()}</Badge>

const NO_ERRORS: ReadonlyArray<FieldError> = []

export function SegmentsPage() {
  const projectId = useProjectId()
  // Member counts move as contacts and events come in: the list follows them.
  const query = useApiQuery(["segments", "list"], (client) => client.segments.list({}))
  useLiveRefresh(anyChange, [["segments"]])
  return (
    <Page title="Segments" actions={<Link to={`/p/${projectId}/segments/new`} className="btn-primary">New segment</Link>}>
      <QueryView query={query} isEmpty={(list) => list.length === 0} empty={<Empty title="No segments yet">Group contacts by their data, events and engagement with <Link className="link" to={`/p/${projectId}/segments/new`}>a new segment</Link>.</Empty>}>
        {(list) => (
          <Table label="Segments" head={["Name", "Type", "Members", ["Tracked", wideOnly], ["Updated", wideOnly]]}>
            {list.map((segment) => (
              <tr key={segment.id} className="hover:bg-slate-50">
                <td className={cell}><Link to={`/p/${projectId}/segments/${segment.id}`} className="link break-words">{segment.name}</Link></td>
                <td className={cell}>{typeBadge(segment.type)}</td>
                <td className={`${cell} tabular-nums`} data-testid="member-count">{segment.memberCount.toLocaleString()}</td>
                <td className={`${cell} ${wideOnly}`}>{segment.trackMembership ? "Yes" : "No"}</td>
                <td className={`${cell} ${wideOnly} whitespace-nowrap text-slate-600`}>{formatDate(segment.updatedAt)}</td>
              </tr>
            ))}
          </Table>
        )}
      </QueryView>
    </Page>
  )
}

/** The builder beside its live count: the count's 422s are shown at the builder's nodes. */
function ConditionEditor({ condition, onChange, saveErrors }: {
  readonly condition: Condition
  readonly onChange: (condition: Condition) => void
  readonly saveErrors: ReadonlyArray<FieldError>
}) {
  const [previewErrors, setPreviewErrors] = useState<ReadonlyArray<FieldError>>(NO_ERRORS)
  // Contacts come and change while the condition is looked at: the count follows them.
  useLiveRefresh(anyChange, [["segments", "preview"]])
  return (
    <div className="grid min-w-0 gap-4 lg:grid-cols-[minmax(0,1fr)_18rem]">
      <ConditionBuilder value={condition} onChange={onChange} path="condition" errors={previewErrors.length > 0 ? previewErrors : saveErrors} />
      <div className="min-w-0 lg:sticky lg:top-4 lg:self-start">
        <AudiencePreview audience={{ condition }} label="contacts match" onFieldErrors={setPreviewErrors} />
      </div>
    </div>
  )
}

export function NewSegmentPage() {
  const projectId = useProjectId()
  const navigate = useNavigate()
  const [name, setName] = useState("")
  const [description, setDescription] = useState("")
  const [type, setType] = useState<"DYNAMIC" | "STATIC">("DYNAMIC")
  const [trackMembership, setTrackMembership] = useState(false)
  const [condition, setCondition] = useState<Condition>(newCondition)
  const create = useApiMutation(
    (client) =>
      client.segments.create({
        payload: { name, description: description.trim() === "" ? null : description, type, trackMembership, ...(type === "DYNAMIC" ? { condition } : {}) }
      }),
    { invalidates: [["segments"]], onSuccess: (segment) => navigate(`/p/${projectId}/segments/${segment.id}`) }
  )
  const submit = (event: FormEvent) => {
    event.preventDefault()
    create.mutate(undefined)
  }
  return (
    <Page title="New segment">
      <p className="-mt-4 mb-6 text-sm"><Link to={`/p/${projectId}/segments`} className="link">All segments</Link></p>
      <form onSubmit={submit} className="space-y-6">
        <Card>
          <div className="grid gap-4 sm:grid-cols-2">
            <Field label="Name" value={name} onChange={(event) => setName(event.target.value)} required maxLength={100} />
            <Field label="Description" value={description} onChange={(event) => setDescription(event.target.value)} maxLength={500} />
          </div>
          <fieldset className="mt-4">
            <legend className="text-sm font-medium text-slate-700">Type</legend>
            <div className="mt-2 flex flex-wrap gap-4 text-sm">
              <label className="flex items-center gap-2"><input type="radio" name="type" checked={type === "DYNAMIC"} onChange={() => setType("DYNAMIC")} /> Dynamic: contacts matching a condition</label>
              <label className="flex items-center gap-2"><input type="radio" name="type" checked={type === "STATIC"} onChange={() => setType("STATIC")} /> Static: contacts added by hand</label>
            </div>
          </fieldset>
          <label className="mt-4 flex items-center gap-2 text-sm text-slate-700">
            <input type="checkbox" checked={trackMembership} onChange={(event) => setTrackMembership(event.target.checked)} />
            Track membership (emit entry and exit events, for workflows)
          </label>
        </Card>
        {type === "DYNAMIC" && (
          <Card title="Condition">
            <ConditionEditor condition={condition} onChange={setCondition} saveErrors={create.error?.fieldErrors ?? NO_ERRORS} />
          </Card>
        )}
        <div>
          <button type="submit" className="btn-primary" disabled={create.isPending}>Create segment</button>
          <MutationError error={create.error} />
        </div>
      </form>
    </Page>
  )
}

export function SegmentPage() {
  const { segmentId = "" } = useParams()
  const segment = useApiQuery(["segments", "get", segmentId], (client) => client.segments.get({ params: { id: segmentId } }))
  // Its count and members follow the project's changes (the match preview: ConditionEditor).
  useLiveRefresh(segmentChange(segmentId), [["segments", "get", segmentId], ["segments", "contacts", segmentId]])
  return <QueryView query={segment}>{(segment) => <SegmentDetail segment={segment} />}</QueryView>
}

interface SegmentData {
  readonly id: string
  readonly name: string
  readonly description: string | null
  readonly type: "DYNAMIC" | "STATIC"
  readonly condition: unknown
  readonly trackMembership: boolean
  readonly memberCount: number
  readonly updatedAt: string
}

function SegmentDetail({ segment }: { readonly segment: SegmentData }) {
  const projectId = useProjectId()
  const navigate = useNavigate()
  const [deleting, setDeleting] = useState(false)
  const [trackChosen, setTrackChosen] = useState<boolean | undefined>(undefined)
  const invalidates = [["segments"]] as const
  const track = useApiMutation(
    (client, trackMembership: boolean) => client.segments.update({ params: { id: segment.id }, payload: { trackMembership } }),
    { invalidates }
  )
  const compute = useApiMutation((client) => client.segments.compute({ params: { id: segment.id } }), { invalidates })
  const remove = useApiMutation((client) => client.segments.delete({ params: { id: segment.id } }), {
    onSuccess: () => navigate(`/p/${projectId}/segments`)
  })
  return (
    <Page
      title={segment.name}
      actions={
        <>
          {segment.type === "DYNAMIC" && (
            <button type="button" className="btn-secondary" disabled={compute.isPending} onClick={() => compute.mutate(undefined)}>Compute now</button>
          )}
          <button type="button" className="btn-danger" onClick={() => setDeleting(true)}>Delete</button>
        </>
      }
    >
      <p className="-mt-4 mb-6 text-sm"><Link to={`/p/${projectId}/segments`} className="link">All segments</Link></p>
      {compute.isSuccess && <div className="mb-4"><Notice>Recomputing: members who entered or left will show shortly{segment.trackMembership ? ", with their entry and exit events" : ""}.</Notice></div>}
      <MutationError error={compute.error} />
      <Section title="Segment">
        <Fields
          items={[
            ["Type", typeBadge(segment.type)],
            ["Members", <span data-testid="segment-members" className="tabular-nums">{segment.memberCount.toLocaleString()}</span>],
            ["Tracks entries and exits", (
              <label className="flex items-center gap-2">
                <input
                  type="checkbox"
                  checked={trackChosen ?? segment.trackMembership}
                  disabled={track.isPending}
                  onChange={(event) => {
                    // Shown at once (a controlled box whose value waited for the mutation's state flickered
                    // back for a render); the saved value takes over once the segment is read again.
                    const chosen = event.target.checked
                    setTrackChosen(chosen)
                    track.mutate(chosen, { onSettled: () => setTrackChosen(undefined) })
                  }}
                />
                {segment.trackMembership ? "Yes: segment entry and exit events are emitted" : "No"}
              </label>
            )],
            ["Description", segment.description ?? "—"],
            ["Updated", formatDate(segment.updatedAt)]
          ]}
        />
        <MutationError error={track.error} />
      </Section>
      {segment.type === "DYNAMIC" && <EditCondition segment={segment} />}
      {segment.type === "STATIC" && <AddMembers segmentId={segment.id} />}
      <Members segment={segment} />
      <Confirm
        open={deleting}
        title={`Delete ${segment.name}?`}
        action="Delete segment"
        typed={segment.name}
        danger
        busy={remove.isPending}
        onConfirm={() => remove.mutate(undefined)}
        onCancel={() => setDeleting(false)}
      >
        <p>The segment goes; its contacts stay. Campaigns and segments that use it must be changed first.</p>
        <MutationError error={remove.error} />
      </Confirm>
    </Page>
  )
}

function EditCondition({ segment }: { readonly segment: SegmentData }) {
  const [draft, setDraft] = useState<Condition>(() => asCondition(segment.condition))
  const changed = !sameTree(draft, segment.condition)
  const save = useApiMutation(
    (client) => client.segments.update({ params: { id: segment.id }, payload: { condition: draft } }),
    { invalidates: [["segments"]] }
  )
  return (
    <Section title="Condition">
      <ConditionEditor condition={draft} onChange={setDraft} saveErrors={save.error?.fieldErrors ?? NO_ERRORS} />
      <div className="mt-3 flex flex-wrap items-center gap-2">
        <button type="button" className="btn-primary" disabled={!changed || save.isPending} onClick={() => save.mutate(undefined)}>Save condition</button>
        {changed && <button type="button" className="btn-secondary" onClick={() => setDraft(asCondition(segment.condition))}>Discard changes</button>}
        {save.isSuccess && !changed && <span role="status" className="text-sm text-green-800">Saved: membership is being recomputed.</span>}
      </div>
      <MutationError error={save.error} />
    </Section>
  )
}

const parseEmails = (text: string) => text.split(/[\s,;]+/).map((email) => email.trim()).filter((email) => email !== "")

function AddMembers({ segmentId }: { readonly segmentId: string }) {
  const [text, setText] = useState("")
  const [createMissing, setCreateMissing] = useState(false)
  const add = useApiMutation(
    (client, emails: ReadonlyArray<string>) => client.segments.addMembers({ params: { id: segmentId }, payload: { emails, createMissing } }),
    { invalidates: [["segments"]], onSuccess: () => setText("") }
  )
  return (
    <Section title="Add members">
      <form
        className="rounded-lg border border-slate-200 bg-white p-5"
        onSubmit={(event) => {
          event.preventDefault()
          const emails = parseEmails(text)
          if (emails.length > 0) add.mutate(emails)
        }}
      >
        <label className="block text-sm font-medium text-slate-700">
          Emails (one per line, or separated by commas)
          <textarea className="input mt-1 font-mono" rows={3} value={text} onChange={(event) => setText(event.target.value)} spellCheck={false} />
        </label>
        <label className="mt-3 flex items-center gap-2 text-sm text-slate-700">
          <input type="checkbox" checked={createMissing} onChange={(event) => setCreateMissing(event.target.checked)} />
          Create contacts for addresses not known yet
        </label>
        <button type="submit" className="btn-primary mt-4" disabled={add.isPending || parseEmails(text).length === 0}>Add members</button>
        {add.data && (
          <div className="mt-4">
            <Notice>
              Added {add.data.added}{add.data.created > 0 ? ` (${add.data.created} new contacts)` : ""}.
              {add.data.notFound.length > 0 && <> Not found: <span className="break-all">{add.data.notFound.join(", ")}</span>.</>}
            </Notice>
          </div>
        )}
        <MutationError error={add.error} />
      </form>
    </Section>
  )
}

function Members({ segment }: { readonly segment: SegmentData }) {
  const projectId = useProjectId()
  const [page, setPage] = useState(1)
  const members = useApiQuery(
    ["segments", "contacts", segment.id, page],
    (client) => client.segments.contacts({ params: { id: segment.id }, query: { page: String(page), pageSize: "20" } })
  )
  const remove = useApiMutation(
    (client, email: string) => client.segments.removeMembers({ params: { id: segment.id }, payload: { emails: [email] } }),
    { invalidates: [["segments"]] }
  )
  const isStatic = segment.type === "STATIC"
  return (
    <Section title="Members">
      <MutationError error={remove.error} />
      <QueryView query={members} isEmpty={(result) => result.total === 0} empty={<Empty title="No members">{isStatic ? "Add some by email above." : "No contact matches the condition now."}</Empty>}>
        {(result) => (
          <>
            <Table label="Members" head={["Email", "Subscription", ["Created", wideOnly], ...(isStatic ? [""] : [])]}>
              {result.data.map((contact) => (
                <tr key={contact.id}>
                  <td className={cell}><Link to={`/p/${projectId}/contacts/${contact.id}`} className="link break-all">{contact.email}</Link></td>
                  <td className={cell}>{contact.subscribed ? <Badge tone="green">Subscribed</Badge> : <Badge>Unsubscribed</Badge>}</td>
                  <td className={`${cell} ${wideOnly} whitespace-nowrap text-slate-600`}>{formatDate(contact.createdAt)}</td>
                  {isStatic && (
                    <td className={`${cell} text-right`}>
                      <button type="button" className="btn-secondary py-1" aria-label={`Remove ${contact.email}`} disabled={remove.isPending} onClick={() => remove.mutate(contact.email)}>
                        Remove
                      </button>
                    </td>
                  )}
                </tr>
              ))}
            </Table>
            <NumberedPager page={page} totalPages={result.totalPages} onPage={setPage} />
          </>
        )}
      </QueryView>
    </Section>
  )
}
