/** Messages of kind `workflow` in stream IN: what makes a lane's actor touch its workflows (see stream/messages.ts). */
export type { DueTimer, WorkflowMessage } from "../stream/messages.ts"
