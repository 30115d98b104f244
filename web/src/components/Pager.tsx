/** Previous / next for page-numbered and cursor lists. */
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

/** A page-numbered list's state: its number and the label to show. */
export const pageLabel = (page: number, totalPages: number) => `Page ${page} of ${Math.max(totalPages, 1)}`
