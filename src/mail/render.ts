/**
 * Template rendering: Liquid (liquidjs) in a sandbox, plus our small dialect on top of it.
 *
 * Sandbox: templates come from an empty in-memory map, and `include`, `render` and `layout` (the tags
 * that read other templates) are refused when the template is parsed, so a template using them is
 * refused when saved rather than failing at send; only own properties are readable, and parse size, render time, memory and output are capped, so a
 * hostile template fails fast with a TemplateError instead of stalling (or filling) the process that
 * renders it (src/mail/prepare.ts turns it into the typed RenderError of src/mail/errors.ts). Output is counted as it is produced: rendering stops at the cap, it is not checked after.
 *
 * Dialect, rewritten into plain Liquid before parsing:
 * - `{{ name ?? "fallback" }}`: the fallback when the value is missing or null (not when it is "" or false);
 *   the fallback is always a literal, quoted or not (`{{ name ?? there }}` falls back to "there", as the
 *   reference platform renders it), and of several (`a ?? b ?? c`) the first applies;
 * - `{{ first name }}`: a key with spaces, read from the variables (`data["first name"]` works too).
 * HTML bodies escape every output; subjects are plain text.
 */
import { Context, type Emitter, Liquid, type Template, toPromise, toValue } from "liquidjs"
import { DEFAULT_LOCALE } from "./locales.ts"

/**
 * What this wrapper throws: the template does not parse, or failed while rendering (a filter, the time
 * or memory limit). Thrown, not typed: liquidjs renders in promises; src/mail/prepare.ts, the one place
 * mail is rendered, turns it into the typed RenderError (src/mail/errors.ts).
 */
export class TemplateError extends Error {
  override readonly name = "TemplateError"
}

/** The message of what rendering threw (a TemplateError's own; anything else as text). */
export const templateErrorMessage = (error: unknown): string => (error instanceof TemplateError ? error.message : String(error))

/** The template rendered past the characters allowed for it (rendering stopped there). */
export class OutputLimitError extends TemplateError {
  readonly limit: number
  constructor(limit: number) {
    super(`the template renders to more than ${limit} characters`)
    this.limit = limit
  }
}

export interface RenderLimits {
  /** Characters of template source. */
  readonly parseLimit: number
  /** Milliseconds of render time. */
  readonly renderLimit: number
  /** Roughly, characters of strings and array items created while rendering (captures included). */
  readonly memoryLimit: number
  /** Characters of output, unless a render asks for fewer. */
  readonly outputLimit: number
}

export const DEFAULT_LIMITS: RenderLimits = { parseLimit: 1_000_000, renderLimit: 200, memoryLimit: 20_000_000, outputLimit: 10_000_000 }

/** liquidjs' own conversion of a written value to text. */
const stringify = (value: unknown): string => {
  const plain = toValue(value)
  if (typeof plain === "string") return plain
  if (plain === null || plain === undefined) return ""
  if (Array.isArray(plain)) return plain.map(stringify).join("")
  return String(plain)
}

/** The output of one render: it refuses to grow past `limit` characters. */
class CappedEmitter implements Emitter {
  buffer = ""
  exceeded = false
  private readonly limit: number
  constructor(limit: number) {
    this.limit = limit
  }
  write(html: unknown) {
    const text = stringify(html)
    if (this.buffer.length + text.length > this.limit) {
      this.exceeded = true
      throw new OutputLimitError(this.limit)
    }
    this.buffer += text
  }
}

/** Text rendered into a variable (`capture`, block bodies) is memory the render allocates: charged to its limit. */
class ChargedEmitter implements Emitter {
  buffer = ""
  private readonly memory: Context["memoryLimit"]
  constructor(memory: Context["memoryLimit"]) {
    this.memory = memory
  }
  write(html: unknown) {
    const text = stringify(html)
    this.memory.use(text.length)
    this.buffer += text
  }
}

const makeEngine = (escapeHtml: boolean, limits: RenderLimits) => {
  const engine = new Liquid({
    templates: {},
    ownPropertyOnly: true,
    strictFilters: true,
    outputEscape: escapeHtml ? "escape" : undefined,
    parseLimit: limits.parseLimit,
    renderLimit: limits.renderLimit,
    memoryLimit: limits.memoryLimit,
    cache: false
  })
  // Nested renders that liquidjs gives a buffer of its own (captures) count against the memory limit.
  const renderTemplates = engine.renderer.renderTemplates.bind(engine.renderer)
  engine.renderer.renderTemplates = (templates, context, emitter) =>
    renderTemplates(templates, context, emitter ?? new ChargedEmitter(context.memoryLimit))
  engine.registerFilter("__fallback", (value: unknown, fallback: unknown) => value === undefined || value === null ? fallback : value)
  for (const name of FILE_TAGS) {
    engine.registerTag(name, {
      parse() {
        throw new Error(`the {% ${name} %} tag is not available: templates cannot include other templates`)
      },
      render() {}
    })
  }
  return engine
}

/** Tags that read other templates by name: there are none to read, so they are refused when parsed. */
const FILE_TAGS = ["include", "render", "layout"] as const

/** A Liquid keyword or literal that must not be mistaken for a key with spaces. */
const KEYWORDS = new Set(["and", "or", "contains", "empty", "blank", "nil", "null", "true", "false"])

/** `{{ first name }}` → `{{ ["first name"] }}`; leaves expressions (operators, filters, quotes) alone. */
const rewriteSpacedKey = (expression: string): string => {
  const trimmed = expression.trim()
  const match = /^([A-Za-z_][\w-]*(?:[ \t]+[\w-]+)+)$/.exec(trimmed)
  if (!match) return expression
  const words = trimmed.split(/[ \t]+/)
  if (words.some((word) => KEYWORDS.has(word))) return expression
  return ` data[${JSON.stringify(words.join(" "))}] `
}

/** Splits an output expression at each `??` of its top level (outside quotes): the value, then its fallbacks. */
const splitFallbacks = (expression: string): Array<string> => {
  const parts: Array<string> = []
  let quote: string | undefined
  let start = 0
  for (let i = 0; i < expression.length - 1; i++) {
    const char = expression[i]!
    if (quote) {
      if (char === quote) quote = undefined
    } else if (char === '"' || char === "'") {
      quote = char
    } else if (char === "?" && expression[i + 1] === "?") {
      parts.push(expression.slice(start, i))
      start = i + 2
      i++
    }
  }
  parts.push(expression.slice(start))
  return parts
}

/**
 * A fallback as a Liquid string literal: a quoted one as written, a bare one (`there`, `Dear customer`)
 * quoted, as the reference platform reads it (a literal, never a variable). Liquid strings have no
 * escapes: a bare fallback holding both quote characters keeps its double quotes as `&quot;`.
 */
const fallbackLiteral = (raw: string): string => {
  const value = raw.trim()
  if (value.length >= 2 && (value[0] === '"' || value[0] === "'") && value.at(-1) === value[0]) return value
  if (!value.includes('"')) return `"${value}"`
  if (!value.includes("'")) return `'${value}'`
  return `"${value.replaceAll('"', "&quot;")}"`
}

/** Rewrites our dialect inside `{{ … }}` output tags into plain Liquid. */
export const toLiquid = (source: string): string =>
  source.replace(/\{\{(-?)([\s\S]*?)(-?)\}\}/g, (_whole, open: string, inner: string, close: string) => {
    // Filters apply to the value with its fallback: `a ?? "x" | upcase` is `(a ?? "x") | upcase`.
    const pipe = findTopLevelPipe(inner)
    let head = pipe === -1 ? inner : inner.slice(0, pipe)
    const filters = pipe === -1 ? "" : inner.slice(pipe)
    const [value, ...fallbacks] = splitFallbacks(head)
    head = rewriteSpacedKey(value!)
    if (fallbacks.length > 0) head = `${head} ${fallbacks.map((fallback) => `| __fallback: ${fallbackLiteral(fallback)}`).join(" ")} `
    return `{{${open}${head}${filters}${close}}}`
  })

const findTopLevelPipe = (expression: string): number => {
  let quote: string | undefined
  for (let i = 0; i < expression.length; i++) {
    const char = expression[i]!
    if (quote) {
      if (char === quote) quote = undefined
    } else if (char === '"' || char === "'") {
      quote = char
    } else if (char === "|") {
      return i
    }
  }
  return -1
}

export interface Renderer {
  /** Parses a template once; throws TemplateError on invalid syntax or a template too large. */
  readonly compile: (source: string, kind: "html" | "text") => CompiledTemplate
  readonly render: (source: string, kind: "html" | "text", variables: Record<string, unknown>) => Promise<string>
}

export interface CompiledTemplate {
  /** Renders; fails with an OutputLimitError as soon as the output passes `maxChars` (default: the renderer's outputLimit). */
  readonly render: (variables: Record<string, unknown>, maxChars?: number) => Promise<string>
}

/**
 * The reason liquidjs gives, with the line it names (our rewriting of `{{ … }}` keeps line breaks where
 * they are, so the line is the author's; columns may shift and are left out).
 */
const describe = (error: unknown): string => {
  const message = error instanceof Error ? error.message : String(error)
  // liquidjs appends the template excerpt over several lines; the first line is the reason.
  const first = message.split("\n")[0]!
  const position = /, line:(\d+), col:\d+$/.exec(first)
  return position ? `${first.slice(0, position.index)} (line ${position[1]})` : first
}

export const makeRenderer = (limits: RenderLimits = DEFAULT_LIMITS): Renderer => {
  const engines = { html: makeEngine(true, limits), text: makeEngine(false, limits) }
  const compile = (source: string, kind: "html" | "text"): CompiledTemplate => {
    const engine = engines[kind]
    let templates: Array<Template>
    try {
      templates = engine.parse(toLiquid(source))
    } catch (error) {
      throw new TemplateError(`invalid template: ${describe(error)}`)
    }
    return {
      render: async (variables, maxChars = limits.outputLimit) => {
        const output = new CappedEmitter(maxChars)
        try {
          const context = new Context(variables, engine.options, { sync: false }, { liquid: engine })
          await toPromise(engine.renderer.renderTemplates(templates, context, output))
          return output.buffer
        } catch (error) {
          if (output.exceeded) throw new OutputLimitError(maxChars)
          throw new TemplateError(`template failed to render: ${describe(error)}`)
        }
      }
    }
  }
  return {
    compile,
    render: (source, kind, variables) => {
      try {
        return compile(source, kind).render(variables)
      } catch (error) {
        return Promise.reject(error)
      }
    }
  }
}

let checker: Renderer | undefined
const syntaxChecker = (): Renderer => (checker ??= makeRenderer())

/**
 * Why a template's source does not parse (under the default limits), or undefined when it does: templates
 * are refused when saved (templates, campaigns, /v1/send, workflow SEND_EMAIL steps), not when mail is sent.
 */
export const templateSyntaxProblem = (source: string, kind: "html" | "text"): string | undefined => {
  try {
    syntaxChecker().compile(source, kind)
    return undefined
  } catch (error) {
    return templateErrorMessage(error)
  }
}

/**
 * The variables a template sees: the contact's data and this send's values at the top level (the
 * send's win), the same under `data`, plus `email`, `id` (also as `plunk_email`, `plunk_id`), the
 * contact's links and `locale`.
 */
export const templateVariables = (input: {
  readonly contact: { readonly id: string; readonly email: string; readonly data: Readonly<Record<string, unknown>> }
  readonly sendData?: Readonly<Record<string, unknown>> | undefined
  readonly links: { readonly unsubscribeUrl: string; readonly subscribeUrl: string; readonly manageUrl: string }
  readonly extra?: Readonly<Record<string, unknown>> | undefined
}): Record<string, unknown> => {
  const data = { ...input.contact.data, ...input.sendData }
  const locale = data.locale
  return {
    ...data,
    // The contact's locale as given (`de-AT` stays `de-AT`), or, without one, the language their pages speak.
    locale: locale === undefined || locale === null || locale === "" ? DEFAULT_LOCALE : locale,
    data,
    ...input.extra,
    contact: { id: input.contact.id, email: input.contact.email, data: input.contact.data },
    email: input.contact.email,
    id: input.contact.id,
    // The reference platform's names for the same (reserved keys: never custom data).
    plunk_id: input.contact.id,
    plunk_email: input.contact.email,
    ...input.links
  }
}
