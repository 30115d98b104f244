/**
 * A contact job (CSV import or bulk action), polled from the API until it is done: its progress bar,
 * its counts and its error rows.
 */
import type { Job as JobSchema } from "../../../src/http/api/contactJobs.ts"
import { useApiQuery } from "../api/hooks.ts"
import { Badge, cell, Table } from "./Page.tsx"
import { countsOf } from "./jobCounts.ts"

export type ContactJob = typeof JobSchema.Type

const POLL_MS = 500

export const isFinished = (job: ContactJob | undefined) => job?.status === "COMPLETED" || job?.status === "FAILED"

/** The job's state, asked again every half second until it has finished. */
export const useContactJob = (kind: "import" | "bulk", jobId: string | undefined) =>
  useApiQuery(
    ["contact-jobs", kind, jobId],
    (client) =>
      kind === "import"
        ? client.contactJobs.importStatus({ params: { jobId: jobId! } })
        : client.contactJobs.bulkStatus({ params: { jobId: jobId! } }),
    { enabled: jobId !== undefined, refetchInterval: (query) => (isFinished(query.state.data) ? false : POLL_MS) }
  )

/** Whole percent of the rows accounted for (100 only once the job has finished). */
export const percentOf = (job: ContactJob) => {
  if (job.status === "COMPLETED") return 100
  if (job.progress.total === 0) return 0
  return Math.min(99, Math.floor((job.progress.processed / job.progress.total) * 100))
}

const statusTone = (status: ContactJob["status"]) => (status === "COMPLETED" ? "green" : status === "FAILED" ? "red" : "indigo")

export function JobProgress({ job, label }: { readonly job: ContactJob; readonly label: string }) {
  const percent = percentOf(job)
  return (
    <div className="space-y-3">
      <div className="flex flex-wrap items-center justify-between gap-2">
        <Badge tone={statusTone(job.status)}>{job.status.toLowerCase()}</Badge>
        <span className="text-sm text-slate-600" data-testid="job-percent">{percent} %</span>
      </div>
      <div
        role="progressbar"
        aria-label={label}
        aria-valuemin={0}
        aria-valuemax={100}
        aria-valuenow={percent}
        className="h-3 overflow-hidden rounded-full bg-slate-200"
      >
        <div className={`h-full transition-all ${job.status === "FAILED" ? "bg-red-600" : "bg-indigo-600"}`} style={{ width: `${percent}%` }} />
      </div>
      <p className="text-sm text-slate-700" data-testid="job-counts">{countsOf(job)}</p>
    </div>
  )
}

export function JobErrors({ job }: { readonly job: ContactJob }) {
  if (job.errors.length === 0) return null
  const more = job.progress.skipped + job.progress.failed - job.errors.length
  return (
    <>
      <Table label="Rows not applied" head={[job.type === "import" ? "Row" : "Position", "Contact", "Reason"]}>
        {job.errors.map((error) => (
          <tr key={`${error.row}-${error.reason}`}>
            <td className={`${cell} font-mono`}>{error.row}</td>
            <td className={`${cell} break-all`}>{error.email ?? error.contactId ?? "—"}</td>
            <td className={`${cell} break-words`}>{error.reason}</td>
          </tr>
        ))}
      </Table>
      {more > 0 && <p className="mt-2 text-sm text-slate-600">…and {more.toLocaleString()} more (the first 100 are listed).</p>}
    </>
  )
}
