/**
 * Branded ids: a ProjectId is not a ContactId even though both are uuid strings, so a repository
 * answering them (and code passing them on) cannot mix them up. Decoded from rows by the
 * repositories' row schemas (src/store/columns.ts and each repository's row).
 */
import { Schema } from "effect"

export const ProjectId = Schema.String.pipe(Schema.brand("ProjectId"))
export type ProjectId = typeof ProjectId.Type

export const ContactId = Schema.String.pipe(Schema.brand("ContactId"))
export type ContactId = typeof ContactId.Type

export const DomainId = Schema.String.pipe(Schema.brand("DomainId"))
export type DomainId = typeof DomainId.Type

export const TemplateId = Schema.String.pipe(Schema.brand("TemplateId"))
export type TemplateId = typeof TemplateId.Type

export const CampaignId = Schema.String.pipe(Schema.brand("CampaignId"))
export type CampaignId = typeof CampaignId.Type

export const WorkflowId = Schema.String.pipe(Schema.brand("WorkflowId"))
export type WorkflowId = typeof WorkflowId.Type

export const WorkflowStepId = Schema.String.pipe(Schema.brand("WorkflowStepId"))
export type WorkflowStepId = typeof WorkflowStepId.Type

export const ExecutionId = Schema.String.pipe(Schema.brand("ExecutionId"))
export type ExecutionId = typeof ExecutionId.Type
