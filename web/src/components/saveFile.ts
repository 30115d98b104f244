/** Hands text the app fetched (through the typed client) to the browser as a downloaded file. */
export const saveFile = (content: string, type: string, filename: string) => {
  const url = URL.createObjectURL(new Blob([content], { type }))
  const link = document.createElement("a")
  link.href = url
  link.download = filename
  document.body.append(link)
  link.click()
  link.remove()
  setTimeout(() => URL.revokeObjectURL(url), 10_000)
}
