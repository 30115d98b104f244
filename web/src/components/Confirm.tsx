/**
 * A confirmation in a modal <dialog> (focus stays inside, Escape cancels). With `typed`, the action
 * stays disabled until that text is typed exactly: for what cannot be undone.
 */
import { type ReactNode, useEffect, useRef, useState } from "react"

export function Confirm({
  open,
  title,
  children,
  action,
  typed,
  danger = false,
  busy = false,
  onConfirm,
  onCancel
}: {
  readonly open: boolean
  readonly title: string
  readonly children: ReactNode
  readonly action: string
  readonly typed?: string
  readonly danger?: boolean
  readonly busy?: boolean
  readonly onConfirm: () => void
  readonly onCancel: () => void
}) {
  const dialog = useRef<HTMLDialogElement>(null)
  const [text, setText] = useState("")
  useEffect(() => {
    const element = dialog.current
    if (!element) return
    if (open && !element.open) {
      setText("")
      element.showModal()
    }
    if (!open && element.open) element.close()
  }, [open])
  const ready = typed === undefined || text === typed
  return (
    <dialog
      ref={dialog}
      aria-label={title}
      onCancel={(event) => {
        event.preventDefault()
        onCancel()
      }}
      className="m-auto w-[min(32rem,calc(100vw-2rem))] rounded-lg border border-slate-200 p-0 shadow-xl backdrop:bg-slate-900/40"
    >
      <form
        method="dialog"
        className="p-6"
        onSubmit={(event) => {
          event.preventDefault()
          if (ready) onConfirm()
        }}
      >
        <h2 className="text-lg font-semibold text-slate-900">{title}</h2>
        <div className="mt-2 text-sm text-slate-700">{children}</div>
        {typed !== undefined && (
          <label className="mt-4 block text-sm text-slate-700">
            Type <strong className="font-mono">{typed}</strong> to confirm
            <input className="input mt-1 font-mono" value={text} onChange={(event) => setText(event.target.value)} autoComplete="off" spellCheck={false} />
          </label>
        )}
        <div className="mt-6 flex justify-end gap-2">
          <button type="button" className="btn-secondary" onClick={onCancel}>Cancel</button>
          <button type="submit" className={danger ? "btn-danger" : "btn-primary"} disabled={!ready || busy}>{action}</button>
        </div>
      </form>
    </dialog>
  )
}
