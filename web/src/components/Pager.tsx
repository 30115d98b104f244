/** Previous / next for page-numbered and cursor lists. */
import { useEffect, useState } from "react"

export function Pager({
  label,
  hasPrevious,
  hasNext,
  onPrevious,
  onNext
}: {
  readonly label: string
  readonly hasPrevious: boolean
  readonly hasNext: boolean
  readonly onPrevious: () => void
  readonly onNext: () => void
}) {
  if (!hasPrevious && !hasNext) return null
  return (
    <nav aria-label="Pages" className="mt-4 flex items-center justify-between gap-3">
      <button type="button" className="btn-secondary" disabled={!hasPrevious} onClick={onPrevious}>Previous</button>
      <span className="text-sm text-slate-600">{label}</span>
      <button type="button" className="btn-secondary" disabled={!hasNext} onClick={onNext}>Next</button>
    </nav>
  )
}

/** The label of a page-numbered list's position. */
export const pageLabel = (page: number, totalPages: number) => `Page ${page} of ${Math.max(totalPages, 1)}`

/** Previous / next for a page-numbered list (page from 1 to totalPages). */
export function NumberedPager({ page, totalPages, onPage }: {
  readonly page: number
  readonly totalPages: number
  readonly onPage: (page: number) => void
}) {
  return (
    <Pager
      label={pageLabel(page, totalPages)}
      hasPrevious={page > 1}
      hasNext={page < totalPages}
      onPrevious={() => onPage(page - 1)}
      onNext={() => onPage(page + 1)}
    />
  )
}

/**
 * The position in a cursor list: the cursor of the page shown (undefined for the first) and the Pager
 * for a page's answer. Going back pops the cursors walked; a new `resetKey` (other filters) starts over.
 */
export function useCursorPages(resetKey: string) {
  const [cursors, setCursors] = useState<ReadonlyArray<string>>([])
  useEffect(() => setCursors([]), [resetKey])
  const cursor = cursors.at(-1)
  const pager = (page: { readonly cursor: string | null; readonly hasMore: boolean }) => (
    <Pager
      label={`Page ${cursors.length + 1}`}
      hasPrevious={cursors.length > 0}
      hasNext={page.hasMore && page.cursor !== null}
      onPrevious={() => setCursors(cursors.slice(0, -1))}
      onNext={() => {
        if (page.cursor !== null) setCursors([...cursors, page.cursor])
      }}
    />
  )
  return { cursor, pager }
}
