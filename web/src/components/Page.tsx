/** A page's heading (the focus target after navigation), its title in the tab, and its actions. */
import { type ReactNode, type RefObject, useEffect, useRef, useState } from "react"

export function Page({ title, actions, children }: { readonly title: string; readonly actions?: ReactNode; readonly children: ReactNode }) {
  useEffect(() => {
    document.title = `${title} · mailstream`
  }, [title])
  return (
    <>
      <div className="mb-6 flex flex-wrap items-center justify-between gap-3">
        <h1 className="text-2xl font-semibold tracking-tight text-slate-900">{title}</h1>
        {actions && <div className="flex flex-wrap gap-2">{actions}</div>}
      </div>
      {children}
    </>
  )
}

/** A labelled block of a detail page. */
export function Section({ title, children }: { readonly title: string; readonly children: ReactNode }) {
  return (
    <section className="mb-8" aria-label={title}>
      <h2 className="mb-3 text-lg font-semibold text-slate-800">{title}</h2>
      {children}
    </section>
  )
}

/** Label / value pairs. */
export function Fields({ items }: { readonly items: ReadonlyArray<readonly [string, ReactNode]> }) {
  return (
    <dl className="grid grid-cols-1 gap-x-6 gap-y-3 rounded-lg border border-slate-200 bg-white p-5 sm:grid-cols-[max-content_1fr]">
      {items.map(([label, value]) => (
        <div key={label} className="contents">
          <dt className="text-sm font-medium text-slate-500">{label}</dt>
          <dd className="min-w-0 break-words text-slate-900">{value}</dd>
        </div>
      ))}
    </dl>
  )
}

export function Badge({ tone = "slate", children }: { readonly tone?: "slate" | "green" | "amber" | "red" | "indigo"; readonly children: ReactNode }) {
  const tones = {
    slate: "bg-slate-100 text-slate-700",
    green: "bg-green-100 text-green-800",
    amber: "bg-amber-100 text-amber-900",
    red: "bg-red-100 text-red-800",
    indigo: "bg-indigo-100 text-indigo-800"
  }
  return <span className={`inline-flex items-center rounded-full px-2 py-0.5 text-xs font-medium ${tones[tone]}`}>{children}</span>
}

export const formatDate = (iso: string | null | undefined): string =>
  iso ? new Date(iso).toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" }) : "—"

/** Classes of a column shown from 640 px only (for its header and its cells). */
export const wideOnly = "hidden sm:table-cell"

/** True while the element is wider inside than its box (it scrolls sideways), followed as it resizes. */
const useScrollsSideways = (element: RefObject<HTMLElement | null>): boolean => {
  const [scrolls, setScrolls] = useState(false)
  useEffect(() => {
    const target = element.current
    if (!target) return
    const measure = () => setScrolls(target.scrollWidth > target.clientWidth)
    measure()
    const observer = new ResizeObserver(measure)
    observer.observe(target)
    if (target.firstElementChild) observer.observe(target.firstElementChild)
    return () => observer.disconnect()
  }, [element])
  return scrolls
}

/**
 * A table that scrolls inside its own box on narrow screens instead of widening the page. A heading
 * given as [label, className] carries classes such as wideOnly (the label may be a control: a checkbox).
 */
export function Table({
  label,
  head,
  children
}: {
  readonly label: string
  readonly head: ReadonlyArray<string | readonly [ReactNode, string]>
  readonly children: ReactNode
}) {
  const box = useRef<HTMLDivElement>(null)
  const scrolls = useScrollsSideways(box)
  return (
    // A box that scrolls is focusable, so a keyboard can scroll it too (axe: scrollable-region-focusable).
    <div
      ref={box}
      className="overflow-x-auto rounded-lg border border-slate-200 bg-white"
      {...(scrolls ? { tabIndex: 0, role: "region", "aria-label": `${label}, scrolls sideways` } : {})}
    >
      <table className="min-w-full divide-y divide-slate-200 text-sm" aria-label={label}>
        <thead className="bg-slate-50">
          <tr>
            {head.map((heading, index) => {
              const [text, className] = typeof heading === "string" ? [heading, ""] : heading
              return <th key={index} scope="col" className={`whitespace-nowrap px-4 py-2.5 text-left font-medium text-slate-600 ${className}`}>{text}</th>
            })}
          </tr>
        </thead>
        <tbody className="divide-y divide-slate-100">{children}</tbody>
      </table>
    </div>
  )
}

export const cell = "px-4 py-2.5 align-top"
