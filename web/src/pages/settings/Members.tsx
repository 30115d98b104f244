/**
 * Members and pending invitations. ADMINs invite, re-role and remove MEMBERs and ADMINs, and withdraw or
 * resend invitations; only OWNERs touch OWNERs (and invitations as OWNER); anyone may leave. Controls the
 * role does not allow are not shown (the API refuses them too). Everyone joins through an invitation's
 * link, whose value is shown once, after it is sent, for the inviter to pass on if the mail does not arrive.
 */
import { useQueryClient } from "@tanstack/react-query"
import { useEffect, useState } from "react"
import { useNavigate } from "react-router"
import { Roles, type Role } from "../../../../src/domain/permissions.ts"
import { fieldError } from "../../api/fieldErrors.ts"
import { useApiMutation, useApiQuery, useProjectId } from "../../api/hooks.ts"
import { accountKey, useCurrentProject, useMe } from "../../api/session.ts"
import { Confirm } from "../../components/Confirm.tsx"
import { CopyButton } from "../../components/CopyButton.tsx"
import { Card, changeClearing, Field, MutationError, Notice } from "../../components/Form.tsx"
import { Badge, cell, formatDate, Table, wideOnly } from "../../components/Page.tsx"
import { QueryView } from "../../components/States.tsx"

const MEMBERS = ["members"]

interface Member {
  readonly userId: string
  readonly email: string
  readonly role: Role
}

/** An invitation just sent (or sent again), with its link: the only time the dashboard can show it. */
interface SentInvitation {
  readonly invitation: { readonly id: string; readonly email: string; readonly role: Role }
  readonly link: string
}

export function MembersPage() {
  const projectId = useProjectId()!
  const { can } = useCurrentProject()
  const me = useMe()
  const members = useApiQuery(MEMBERS, (client) => client.accounts.listMembers({ params: { id: projectId } }))
  const queryClient = useQueryClient()
  const navigate = useNavigate()
  const [removing, setRemoving] = useState<Member | null>(null)
  const [sent, setSent] = useState<SentInvitation | null>(null)

  /** Roles the user may give: OWNER only by an OWNER. */
  const grantable = Roles.filter((role) => role !== "OWNER" || can("own"))
  const mayChange = (member: Member) => can("manage") && (member.role !== "OWNER" || can("own"))

  const resend = useApiMutation(
    (client, invitationId: string) => client.accounts.resendInvitation({ params: { id: projectId, invitationId } }),
    { invalidates: [MEMBERS], onSuccess: setSent }
  )
  const withdraw = useApiMutation(
    (client, invitationId: string) => client.accounts.withdrawInvitation({ params: { id: projectId, invitationId } }),
    { invalidates: [MEMBERS] }
  )
  // A withdrawn invitation's link no longer works: stop showing it.
  const withdrawn = withdraw.isSuccess ? withdraw.variables : undefined
  useEffect(() => {
    if (withdrawn !== undefined) setSent((shown) => (shown?.invitation.id === withdrawn ? null : shown))
  }, [withdrawn])

  const changeRole = useApiMutation(
    (client, { userId, role }: { userId: string; role: Role }) => client.accounts.updateMember({ params: { id: projectId, userId }, payload: { role } }),
    { invalidates: [MEMBERS] }
  )
  const remove = useApiMutation((client, userId: string) => client.accounts.removeMember({ params: { id: projectId, userId } }), {
    invalidates: [MEMBERS],
    onSuccess: async () => {
      const left = removing?.userId === me.data?.id
      setRemoving(null)
      if (left) {
        await queryClient.invalidateQueries({ queryKey: accountKey("projects") })
        void navigate("/p")
      }
    }
  })

  return (
    <div className="space-y-6">
      <QueryView query={members}>
        {({ members: list, invitations }) => (
          <>
            <Table label="Members" head={["Email", "Role", ["Joined", wideOnly], ""]}>
              {list.map((member) => {
                const self = member.userId === me.data?.id
                return (
                  <tr key={member.userId}>
                    <td className={`${cell} break-all`}>{member.email}{self && <span className="ml-2 text-slate-500">(you)</span>}</td>
                    <td className={cell}>
                      {mayChange(member) && !self
                        ? (
                          <select
                            className="input w-auto py-1"
                            aria-label={`Role of ${member.email}`}
                            value={member.role}
                            disabled={changeRole.isPending}
                            onChange={(event) => changeRole.mutate({ userId: member.userId, role: event.target.value as Role })}
                          >
                            {(grantable.includes(member.role) ? grantable : [member.role, ...grantable]).map((role) => <option key={role}>{role}</option>)}
                          </select>
                        )
                        : <Badge tone={member.role === "MEMBER" ? "slate" : "indigo"}>{member.role}</Badge>}
                    </td>
                    <td className={`${cell} ${wideOnly} text-slate-600`}>{formatDate(member.joinedAt)}</td>
                    <td className={`${cell} text-right`}>
                      {(self || mayChange(member)) && (
                        <button type="button" className="btn-secondary px-2 py-1 text-xs" onClick={() => setRemoving(member)}>
                          {self ? "Leave" : `Remove`}
                          {!self && <span className="sr-only"> {member.email}</span>}
                        </button>
                      )}
                    </td>
                  </tr>
                )
              })}
            </Table>
            {invitations.length > 0 && (
              <Table label="Pending invitations" head={["Invited email", "Role", ["Expires", wideOnly], ""]}>
                {invitations.map((invitation) => (
                  <tr key={invitation.id}>
                    <td className={`${cell} break-all`}>{invitation.email}</td>
                    <td className={cell}><Badge>{invitation.role}</Badge></td>
                    <td className={`${cell} ${wideOnly} text-slate-600`}>{formatDate(invitation.expiresAt)}</td>
                    <td className={`${cell} whitespace-nowrap text-right`}>
                      {can("manage") && (invitation.role !== "OWNER" || can("own")) && (
                        <span className="inline-flex flex-col gap-1 sm:flex-row sm:gap-2">
                          {([["Resend", resend], ["Withdraw", withdraw]] as const).map(([label, action]) => (
                            <button
                              key={label}
                              type="button"
                              className="btn-secondary px-2 py-1 text-xs"
                              disabled={action.isPending}
                              onClick={() => action.mutate(invitation.id)}
                            >
                              {label}<span className="sr-only"> the invitation to {invitation.email}</span>
                            </button>
                          ))}
                        </span>
                      )}
                    </td>
                  </tr>
                ))}
              </Table>
            )}
          </>
        )}
      </QueryView>
      <MutationError error={changeRole.error ?? resend.error ?? withdraw.error} />
      {sent && <InvitationLink sent={sent} />}
      {can("manage") && <Invite grantable={grantable} onSent={setSent} />}
      <Confirm
        open={removing !== null}
        title={removing?.userId === me.data?.id ? "Leave this project?" : `Remove ${removing?.email}?`}
        action={removing?.userId === me.data?.id ? "Leave" : "Remove"}
        danger
        busy={remove.isPending}
        onConfirm={() => removing && remove.mutate(removing.userId)}
        onCancel={() => setRemoving(null)}
      >
        {removing?.userId === me.data?.id ? "You lose access to this project until someone invites you again." : "They lose access to this project at once."}
        <MutationError error={remove.error} />
      </Confirm>
    </div>
  )
}

/** The link of the invitation just sent: it was mailed, and works once, for 7 days, for that email only. */
function InvitationLink({ sent }: { readonly sent: SentInvitation }) {
  return (
    <Notice>
      <p>Invitation mailed to {sent.invitation.email} as {sent.invitation.role}.</p>
      <p className="mt-1 text-sm">If the mail does not arrive, pass them this link: it works once, within 7 days, for that email only.</p>
      <div className="mt-2 flex items-center gap-2">
        <code className="min-w-0 flex-1 truncate rounded bg-white px-2 py-1.5 font-mono text-xs text-slate-900" data-testid="invitation-link">{sent.link}</code>
        <CopyButton value={sent.link} label="invitation link" />
      </div>
    </Notice>
  )
}

function Invite({ grantable, onSent }: { readonly grantable: ReadonlyArray<Role>; readonly onSent: (sent: SentInvitation) => void }) {
  const projectId = useProjectId()!
  const [email, setEmail] = useState("")
  const [role, setRole] = useState<Role>("MEMBER")
  const invite = useApiMutation(
    (client, payload: { email: string; role: Role }) => client.accounts.addMember({ params: { id: projectId }, payload }),
    {
      invalidates: [MEMBERS],
      onSuccess: (sent) => {
        setEmail("")
        onSent(sent)
      }
    }
  )
  return (
    <Card title="Invite someone">
      <form
        className="flex flex-col gap-3 sm:flex-row sm:items-end"
        onSubmit={(event) => {
          event.preventDefault()
          invite.mutate({ email: email.trim(), role })
        }}
      >
        <div className="flex-1">
          <Field label="Email" type="email" value={email} onChange={changeClearing(invite, setEmail)} required error={fieldError(invite.error, "email")} />
        </div>
        <label className="block text-sm font-medium text-slate-700">
          Role
          <select className="input mt-1" value={role} onChange={(event) => setRole(event.target.value as Role)}>
            {grantable.map((option) => <option key={option}>{option}</option>)}
          </select>
        </label>
        <button type="submit" className="btn-primary" disabled={invite.isPending}>Invite</button>
      </form>
      <p className="mt-2 text-xs text-slate-500">
        They get a link by mail, valid for 7 days: they join by opening it, signing up with that email or signed in as it.
        Inviting an email again replaces its pending invitation.
      </p>
      <MutationError error={invite.error} fields={["email", "role"]} />
    </Card>
  )
}
