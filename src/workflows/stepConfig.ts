/**
 * Step configs: what each step type accepts in its config (validated and normalised, with field paths
 * under `config` for 422s), then decoded through the schema the engine runs on. The graph rules
 * (transitions, successors) are in graph.ts.
 */
import { canonicalCondition, canonicalField, renameFields } from "../domain/conditions/canonical.ts"
import { validateCondition } from "../domain/conditions/validate.ts"
import { dataPayloadProblems, isPlainObject } from "../domain/customData.ts"
import { isValidEmail } from "../domain/email.ts"
import { isUuid } from "../domain/ids.ts"
import { decodeStepDefinition, STEP_TYPES, type StepType, WEBHOOK_METHOD_NAMES } from "../domain/workflowSteps.ts"
import { templateSyntaxProblem } from "../mail/render.ts"
import { restoreContextPath, rewrittenForValidation, workflowField } from "./conditionStep.ts"
import type { ConfigProblem } from "./graph.ts"

/** What POST /workflows/:id/steps accepts (the TRIGGER step comes with the workflow). */
export const ADDABLE_STEP_TYPES = STEP_TYPES.filter((type) => type !== "TRIGGER")

export const WEBHOOK_METHODS = WEBHOOK_METHOD_NAMES
export const DELAY_UNITS = { minutes: 60_000, hours: 3_600_000, days: 86_400_000 } as const
export const MAX_DELAY_MS = 365 * 86_400_000

const liquidProblem = (field: string, source: string, kind: "html" | "text"): ConfigProblem | undefined => {
  const message = templateSyntaxProblem(source, kind)
  return message === undefined ? undefined : { field, message, code: "invalid_template" }
}

const positiveNumber = (value: unknown) => typeof value === "number" && Number.isFinite(value) && value > 0

/**
 * Validates (and normalises) a step's config; `field` paths are under `config`. The field checks name
 * each problem; a config that passes them is then decoded through the step schema the engine runs on
 * (src/domain/workflowSteps.ts), so nothing is stored that the engine cannot interpret.
 */
export const checkStepConfig = (type: StepType, input: unknown): { config: Record<string, unknown>; problems: Array<ConfigProblem> } => {
  const checked = checkStepFields(type, input)
  if (checked.problems.length > 0) return checked
  const decoded = decodeStepDefinition(type, checked.config)
  return decoded._tag === "Failure"
    ? { config: checked.config, problems: [{ field: "config", message: decoded.failure, code: "invalid_value" }] }
    : checked
}

const checkStepFields = (type: StepType, input: unknown): { config: Record<string, unknown>; problems: Array<ConfigProblem> } => {
  const problems: Array<ConfigProblem> = []
  const problem = (field: string, message: string, code = "invalid_value") => problems.push({ field: `config.${field}`, message, code })
  if (input !== undefined && !isPlainObject(input)) {
    return { config: {}, problems: [{ field: "config", message: "config must be an object", code: "invalid_type" }] }
  }
  const config: Record<string, unknown> = { ...(input as Record<string, unknown> | undefined) }
  switch (type) {
    case "TRIGGER":
      break
    case "SEND_EMAIL": {
      if (typeof config.templateId !== "string" || !isUuid(config.templateId))
        problem("templateId", "templateId is required (a template id)", "required")
      const recipient = config.recipient === undefined ? { type: "CONTACT" } : config.recipient
      if (!isPlainObject(recipient) || (recipient.type !== "CONTACT" && recipient.type !== "CUSTOM")) {
        problem("recipient.type", "recipient.type must be CONTACT or CUSTOM")
      } else if (
        recipient.type === "CUSTOM" && (typeof recipient.customEmail !== "string" || !isValidEmail(recipient.customEmail.trim()))
      ) {
        problem("recipient.customEmail", "A CUSTOM recipient needs a valid customEmail", "invalid_string")
      }
      config.recipient = recipient
      break
    }
    case "DELAY": {
      const unit = config.unit
      if (typeof unit !== "string" || !(unit in DELAY_UNITS)) problem("unit", "unit must be minutes, hours or days")
      if (!positiveNumber(config.amount)) problem("amount", "amount must be a positive number")
      else if (
        typeof unit === "string" && unit in DELAY_UNITS &&
        (config.amount as number) * DELAY_UNITS[unit as keyof typeof DELAY_UNITS] > MAX_DELAY_MS
      ) {
        problem("amount", "A delay is at most 365 days", "too_big")
      }
      break
    }
    case "WAIT_FOR_EVENT":
      if (typeof config.eventName !== "string" || config.eventName.trim() === "") problem("eventName", "eventName is required", "required")
      if (config.timeout !== undefined && config.timeout !== null) {
        if (!positiveNumber(config.timeout)) problem("timeout", "timeout is a positive number of seconds")
        else if ((config.timeout as number) * 1000 > MAX_DELAY_MS) problem("timeout", "A timeout is at most 365 days", "too_big")
      }
      break
    case "CONDITION": {
      if (!isPlainObject(config.condition) && config.field === undefined) {
        problem("condition", "A CONDITION step needs a condition tree (condition) or a filter (field, operator, value)", "required")
        break
      }
      // Bare event names are stored as event.<name>, as segments and audiences store them; the reference's
      // field names (workflowField) under ours.
      if (isPlainObject(config.condition)) config.condition = renameFields(canonicalCondition(config.condition), workflowField)
      else {
        const field = canonicalField(config.field, config.operator)
        config.field = typeof field === "string" ? workflowField(field, config.operator) : field
      }
      const found = validateCondition(rewrittenForValidation(config), isPlainObject(config.condition) ? "config.condition" : "config")
      for (const found1 of found) {
        // A one-filter config is validated as a tree; report the config's own paths.
        const field = isPlainObject(config.condition) ? found1.path : found1.path.replace(/^config\.groups\[0\]\.filters\[0\]/, "config")
        problems.push({ field, message: restoreContextPath(found1.message), code: found1.code })
      }
      break
    }
    case "WEBHOOK": {
      const method = config.method === undefined ? "POST" : config.method
      if (typeof method !== "string" || !(WEBHOOK_METHODS as ReadonlyArray<string>).includes(method.toUpperCase())) {
        problem("method", `method must be one of ${WEBHOOK_METHODS.join(", ")}`)
      } else config.method = method.toUpperCase()
      if (typeof config.url !== "string" || !/^https?:\/\//i.test(config.url.trim())) {
        problem("url", "url must be an http(s) URL", typeof config.url === "string" ? "invalid_string" : "required")
      } else {
        const urlProblem = liquidProblem("config.url", config.url, "text")
        if (urlProblem) problems.push(urlProblem)
        else if (!config.url.includes("{{")) {
          try {
            new URL(config.url)
          } catch {
            problem("url", "url is not a valid URL", "invalid_string")
          }
        }
      }
      if (config.headers !== undefined) {
        if (!isPlainObject(config.headers)) problem("headers", "headers must be an object of strings", "invalid_type")
        else {
          for (const [name, value] of Object.entries(config.headers)) {
            if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) problem(`headers.${name}`, "Invalid header name")
            else if (typeof value !== "string" || /[\r\n\0]/.test(value))
              problem(`headers.${name}`, "Header values are strings without CR, LF or NUL")
            else {
              const found = liquidProblem(`config.headers.${name}`, value, "text")
              if (found) problems.push(found)
            }
          }
        }
      }
      if (config.body !== undefined && config.body !== null) {
        const source = typeof config.body === "string" ? config.body : JSON.stringify(config.body)
        if (source === undefined) problem("body", "body must be a string or JSON", "invalid_type")
        else {
          const found = liquidProblem("config.body", source, "text")
          if (found) problems.push(found)
        }
      }
      break
    }
    case "UPDATE_CONTACT": {
      // api-shapes: { updates, subscriptionAction }; the issue's { data, subscribed } is accepted too.
      const updates = config.updates ?? config.data
      if (updates !== undefined && !isPlainObject(updates)) problem("updates", "updates must be an object of custom fields", "invalid_type")
      else if (updates !== undefined) {
        for (const [field, message] of dataPayloadProblems(updates))
          problems.push({ field: `config.updates${field === "data" ? "" : `.${field}`}`, message, code: "too_big" })
      }
      let action = config.subscriptionAction
      if (action === undefined && typeof config.subscribed === "boolean") action = config.subscribed ? "subscribe" : "unsubscribe"
      if (action !== undefined && action !== "none" && action !== "subscribe" && action !== "unsubscribe") {
        problem("subscriptionAction", "subscriptionAction must be none, subscribe or unsubscribe")
      }
      const normalized: Record<string, unknown> = { updates: updates ?? {}, subscriptionAction: action ?? "none" }
      return { config: normalized, problems }
    }
    case "EXIT":
      if (config.reason !== undefined && config.reason !== null && typeof config.reason !== "string")
        problem("reason", "reason must be a string", "invalid_type")
      break
  }
  return { config, problems }
}
