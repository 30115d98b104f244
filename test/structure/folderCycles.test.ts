/**
 * The folders of src/ depend on each other one way: a folder that runs another's code (actors run the
 * workflow engine and campaign fan-out; the sender completes campaigns through the store) is not
 * imported back by it. Walks every import (type-only ones included) between top-level folders and
 * finds the cycles among them (strongly connected folders): there are none, so the folders stand in
 * layers (domain at the bottom; then lib, stream, store; the use cases; actors and http on top) and a
 * reader follows a request or a tracked event downwards only. The files at the root (main.ts, app.ts,
 * config.ts) are the composition root and left out.
 */
import { readdirSync, readFileSync } from "node:fs"
import { dirname, join, relative, resolve } from "node:path"
import ts from "typescript-5"
import { describe, expect, it } from "vitest"

const SRC = new URL("../../src/", import.meta.url).pathname

const sourceFiles = (dir: string): Array<string> =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sourceFiles(join(dir, entry.name)) : entry.name.endsWith(".ts") ? [join(dir, entry.name)] : []
  )

const folderOf = (file: string): string | undefined => {
  const parts = relative(SRC, file).split("/")
  return parts.length > 1 ? parts[0] : undefined
}

/** Folder → the folders its files import, with one file-level example per edge. */
const folderGraph = () => {
  const edges = new Map<string, Map<string, string>>()
  for (const file of sourceFiles(SRC)) {
    const from = folderOf(file)
    if (from === undefined) continue
    for (const { fileName } of ts.preProcessFile(readFileSync(file, "utf8"), true, true).importedFiles) {
      if (!fileName.startsWith(".")) continue
      const target = resolve(dirname(file), fileName)
      const to = folderOf(target)
      if (to === undefined || to === from) continue
      const out = edges.get(from) ?? new Map<string, string>()
      if (!out.has(to)) out.set(to, `${relative(SRC, file)} -> ${relative(SRC, target)}`)
      edges.set(from, out)
    }
  }
  return edges
}

/** Tarjan's strongly connected components with more than one folder, each sorted, sorted by first name. */
const cycles = (edges: Map<string, Map<string, string>>): Array<Array<string>> => {
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: Array<string> = []
  const onStack = new Set<string>()
  const found: Array<Array<string>> = []
  let next = 0
  const visit = (node: string) => {
    index.set(node, next)
    low.set(node, next++)
    stack.push(node)
    onStack.add(node)
    for (const to of edges.get(node)?.keys() ?? []) {
      if (!index.has(to)) {
        visit(to)
        low.set(node, Math.min(low.get(node)!, low.get(to)!))
      } else if (onStack.has(to)) low.set(node, Math.min(low.get(node)!, index.get(to)!))
    }
    if (low.get(node) === index.get(node)) {
      const component: Array<string> = []
      let member: string
      do {
        member = stack.pop()!
        onStack.delete(member)
        component.push(member)
      } while (member !== node)
      if (component.length > 1) found.push(component.sort())
    }
  }
  for (const node of [...edges.keys()].sort()) if (!index.has(node)) visit(node)
  return found.sort((a, b) => a[0]!.localeCompare(b[0]!))
}

/** Folders that import each other directly (both ways), as "a <-> b". */
const mutual = (edges: Map<string, Map<string, string>>): Array<string> =>
  [...edges].flatMap(([from, out]) =>
    [...out.keys()].filter((to) => from < to && edges.get(to)?.has(from)).map((to) => `${from} <-> ${to}`)
  ).sort()

describe("src/ folders", () => {
  const edges = folderGraph()

  it("reads the real tree", () => {
    expect(edges.get("actors")?.has("workflows")).toBe(true)
    expect(edges.get("campaigns")?.has("mail")).toBe(true)
  })

  it("no two folders import each other (named with one file-level import each way)", () => {
    const found = mutual(edges)
    const examples = found.map((pair) => {
      const [a, b] = pair.split(" <-> ") as [string, string]
      return `${pair}: ${edges.get(a)!.get(b)} / ${edges.get(b)!.get(a)}`
    })
    expect(found, examples.join("\n")).toEqual([])
  })

  it("no folders are strongly connected (no cycle through any number of folders)", () => {
    const found = cycles(edges)
    const examples = found.map((component) =>
      component.flatMap((from) => component.filter((to) => edges.get(from)?.has(to)).map((to) => edges.get(from)!.get(to)!)).join("; ")
    )
    expect(found, examples.join("\n")).toEqual([])
  })
})
