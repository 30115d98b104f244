/**
 * CodeMirror 6 for template bodies: HTML with Liquid highlighting, line numbers, undo history. Tab is
 * left to the browser (it moves focus on), so the editor never traps keyboard users.
 */
import { defaultKeymap, history, historyKeymap } from "@codemirror/commands"
import { liquid } from "@codemirror/lang-liquid"
import { defaultHighlightStyle, HighlightStyle, syntaxHighlighting } from "@codemirror/language"
import { Compartment, EditorState } from "@codemirror/state"
import { EditorView, keymap, lineNumbers } from "@codemirror/view"
import { tags } from "@lezer/highlight"
import { useEffect, useRef } from "react"

/** Liquid stands out from the HTML around it: its braces, variables, filters and keywords. */
const liquidStyle = HighlightStyle.define([
  { tag: tags.brace, color: "#4f46e5", fontWeight: "600" },
  { tag: tags.variableName, color: "#0369a1" },
  { tag: tags.function(tags.variableName), color: "#0f766e" },
  { tag: [tags.keyword, tags.controlKeyword, tags.definitionKeyword, tags.operatorKeyword], color: "#9333ea", fontWeight: "600" }
])

const theme = EditorView.theme({
  "&": { fontSize: "13px", backgroundColor: "white" },
  ".cm-content": { fontFamily: "ui-monospace, SFMono-Regular, Menlo, monospace", minHeight: "18rem" },
  ".cm-gutters": { backgroundColor: "#f8fafc", borderRight: "1px solid #e2e8f0", color: "#94a3b8" },
  "&.cm-focused": { outline: "none" }
})

/** Inserts text at the editor's cursor (replacing the selection) and focuses it. */
export type InsertText = (text: string) => void

/** The editable area's accessible name, and the error it is described by while it has one. */
const ariaOf = (label: string, errorId: string | undefined) =>
  EditorView.contentAttributes.of({
    "aria-label": label,
    ...(errorId === undefined ? {} : { "aria-invalid": "true", "aria-describedby": errorId })
  })

export function CodeEditor({ value, onChange, label, insertRef, errorId }: {
  readonly value: string
  readonly onChange: (value: string) => void
  readonly label: string
  /** Filled with the editor's insert function, for toolbar actions such as an uploaded image. */
  readonly insertRef?: { current: InsertText | null }
  /** The id of the message naming what is wrong with the text, while something is. */
  readonly errorId?: string | undefined
}) {
  const host = useRef<HTMLDivElement>(null)
  const view = useRef<EditorView | null>(null)
  const aria = useRef(new Compartment())
  const latest = useRef(onChange)
  latest.current = onChange

  useEffect(() => {
    const editor = new EditorView({
      parent: host.current!,
      state: EditorState.create({
        doc: value,
        extensions: [
          lineNumbers(),
          history(),
          keymap.of([...defaultKeymap, ...historyKeymap]),
          liquid(),
          syntaxHighlighting(liquidStyle),
          syntaxHighlighting(defaultHighlightStyle),
          EditorView.lineWrapping,
          aria.current.of(ariaOf(label, errorId)),
          EditorView.updateListener.of((update) => {
            if (update.docChanged) latest.current(update.state.doc.toString())
          }),
          theme
        ]
      })
    })
    view.current = editor
    if (insertRef) {
      insertRef.current = (text) => {
        editor.dispatch(editor.state.replaceSelection(text))
        editor.focus()
      }
    }
    return () => {
      if (insertRef) insertRef.current = null
      editor.destroy()
    }
    // The editor is made once; later values arrive through the effect below.
  }, []) // eslint-disable-line react-hooks/exhaustive-deps

  // A value from outside (the template loaded, a reset) replaces the text; typing does not come back here.
  useEffect(() => {
    const editor = view.current
    if (editor && editor.state.doc.toString() !== value) {
      editor.dispatch({ changes: { from: 0, to: editor.state.doc.length, insert: value } })
    }
  }, [value])

  useEffect(() => {
    view.current?.dispatch({ effects: aria.current.reconfigure(ariaOf(label, errorId)) })
  }, [label, errorId])

  return (
    <div
      ref={host}
      data-testid="code-editor"
      className={`overflow-hidden rounded-md border ${errorId === undefined ? "border-slate-300" : "border-red-500"} shadow-sm focus-within:border-indigo-500 focus-within:ring-2 focus-within:ring-indigo-500/30`}
    />
  )
}
