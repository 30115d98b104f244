/** Workflow metrics, on the worker's /metrics with the others. */
import { counter } from "../observability/Metrics.ts"

export const WorkflowMetrics = {
  advanced: counter("mailstream_workflow_executions_advanced_total", "Workflow executions started or resumed by project actors"),
  timersFired: counter(
    "mailstream_workflow_timers_fired_total",
    "Workflow DELAY / WAIT_FOR_EVENT timers published back into their partitions"
  ),
  webhookAttempts: counter("mailstream_workflow_webhook_attempts_total", "WEBHOOK step attempts by outcome (done, retry, failed)", [
    "outcome"
  ])
}
