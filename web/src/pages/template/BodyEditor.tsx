/**
 * A mail body's editor, shared by templates and campaigns: CodeMirror with Liquid highlighting, Insert
 * image (uploaded through POST /uploads/image, put in at the cursor) and a reminder of the Liquid one
 * writes.
 */
import { useId, useRef } from "react"
import { useApiMutation } from "../../api/hooks.ts"
import { CodeEditor, type InsertText } from "../../components/CodeEditor.tsx"
import { FieldMessage, MutationError } from "../../components/Form.tsx"

export function BodyEditor({ value, onChange, error }: {
  readonly value: string
  readonly onChange: (body: string) => void
  /** The server's message for the body (a save's 422, or half-typed Liquid found by the preview). */
  readonly error?: string | undefined
}) {
  const insert = useRef<InsertText | null>(null)
  const errorId = useId()
  return (
    <div>
      <div className="mb-1 flex flex-wrap items-center justify-between gap-2">
        <p className="text-sm font-medium text-slate-700">Body</p>
        <ImageUpload onUploaded={(url) => insert.current?.(`<img src="${url}" alt="" style="max-width:100%">`)} />
      </div>
      <CodeEditor label="Body" value={value} onChange={onChange} insertRef={insert} errorId={error === undefined ? undefined : errorId} />
      <FieldMessage id={errorId} message={error} />
      <p className="mt-1 text-xs text-slate-500">
        HTML with Liquid: <code className="font-mono">{"{{ firstName }}"}</code>, <code className="font-mono">{"{{ plan ?? \"free\" }}"}</code>,{" "}
        <code className="font-mono">{"{% if … %}"}</code>; links <code className="font-mono">{"{{ unsubscribeUrl }}"}</code> and <code className="font-mono">{"{{ manageUrl }}"}</code>.
      </p>
    </div>
  )
}

/**
 * Uploads an image through POST /uploads/image (the contract's multipart payload, sent by the typed client)
 * and hands its public URL on, to be put into the body at the cursor.
 */
function ImageUpload({ onUploaded }: { readonly onUploaded: (url: string) => void }) {
  const upload = useApiMutation((client, file: File) => {
    const form = new FormData()
    form.append("file", file, file.name)
    return client.uploads.image({ payload: form })
  }, { onSuccess: ({ url }) => onUploaded(url) })
  return (
    <div className="min-w-0">
      <label className={`btn-secondary cursor-pointer px-2 py-1 text-xs focus-within:ring-2 focus-within:ring-indigo-500 ${upload.isPending ? "opacity-60" : ""}`}>
        {upload.isPending ? "Uploading…" : "Insert image"}
        <input
          type="file"
          accept="image/png,image/jpeg,image/gif,image/webp"
          className="sr-only"
          disabled={upload.isPending}
          onChange={(event) => {
            const file = event.target.files?.[0]
            if (file) upload.mutate(file)
            event.target.value = ""
          }}
        />
      </label>
      <MutationError error={upload.error} />
    </div>
  )
}
