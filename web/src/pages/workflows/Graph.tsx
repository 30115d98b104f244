/**
 * The workflow as a graph (@xyflow/react): a node per step with a handle per outlet (yes/no under a
 * CONDITION, event/timeout under a WAIT_FOR_EVENT), an edge per transition labelled with its branch.
 * Dragging from an outlet to a step connects them, Delete removes the selected step (spliced) or
 * transition, a dropped node keeps its place. The side panel offers the same by form, for the keyboard.
 */
import "@xyflow/react/dist/style.css"
import {
  Background,
  type Connection,
  Controls,
  type Edge,
  Handle,
  MarkerType,
  type Node,
  type NodeProps,
  Position,
  ReactFlow,
  useNodesState
} from "@xyflow/react"
import { useEffect, useMemo } from "react"
import { layout, type Outlet, outletLabel, outletOf, outletsOf, type Step, TYPE_LABELS, type WorkflowData } from "./model.ts"

type StepNodeData = { readonly step: Step; readonly summary: string; readonly outlets: ReadonlyArray<Outlet>; readonly current: boolean }
type StepNode = Node<StepNodeData, "step">

const TYPE_COLOURS: Record<Step["type"], string> = {
  TRIGGER: "border-indigo-400 bg-indigo-50",
  SEND_EMAIL: "border-sky-400 bg-sky-50",
  DELAY: "border-amber-400 bg-amber-50",
  WAIT_FOR_EVENT: "border-amber-400 bg-amber-50",
  CONDITION: "border-violet-400 bg-violet-50",
  WEBHOOK: "border-teal-400 bg-teal-50",
  UPDATE_CONTACT: "border-teal-400 bg-teal-50",
  EXIT: "border-slate-400 bg-slate-50"
}

function StepNodeView({ data, selected }: NodeProps<StepNode>) {
  const { step, summary, outlets, current } = data
  return (
    <div
      data-testid={`step-${step.name}`}
      className={`w-52 rounded-lg border-2 px-3 py-2 text-left shadow-sm ${TYPE_COLOURS[step.type]} ${selected ? "ring-2 ring-indigo-600 ring-offset-1" : ""} ${current ? "outline-dashed outline-2 outline-offset-4 outline-green-600" : ""}`}
    >
      {step.type !== "TRIGGER" && <Handle type="target" position={Position.Top} className="!size-3 !bg-slate-500" />}
      <p className="text-[11px] font-semibold uppercase tracking-wide text-slate-600">{TYPE_LABELS[step.type]}</p>
      <p className="truncate text-sm font-medium text-slate-900">{step.name}</p>
      <p className="truncate text-xs text-slate-600" title={summary}>{summary}</p>
      {outlets.length > 1 && (
        <div className="mt-1 flex justify-between text-[10px] font-semibold uppercase text-slate-500">
          {outlets.map((outlet) => <span key={outlet.id}>{outlet.label}</span>)}
        </div>
      )}
      {outlets.map((outlet, index) => (
        <Handle
          key={outlet.id}
          id={outlet.id}
          type="source"
          position={Position.Bottom}
          style={{ left: `${((index + 1) / (outlets.length + 1)) * 100}%` }}
          className={`!size-3 ${outlet.id === "no" || outlet.id === "TIMEOUT" ? "!bg-rose-500" : outlet.id === "yes" || outlet.id === "EVENT" ? "!bg-green-600" : "!bg-slate-500"}`}
        />
      ))}
    </div>
  )
}

const nodeTypes = { step: StepNodeView }

export function WorkflowGraph({
  workflow,
  summaryOf,
  selectedId,
  currentStepIds,
  onSelect,
  onConnect,
  onMove,
  onDeleteStep,
  onDeleteTransition
}: {
  readonly workflow: WorkflowData
  readonly summaryOf: (step: Step) => string
  readonly selectedId: string | null
  readonly currentStepIds: ReadonlySet<string>
  readonly onSelect: (stepId: string | null) => void
  readonly onConnect: (fromStepId: string, outlet: Outlet, toStepId: string) => void
  readonly onMove: (stepId: string, position: { x: number; y: number }) => void
  readonly onDeleteStep: (step: Step) => void
  readonly onDeleteTransition: (transitionId: string) => void
}) {
  const built = useMemo((): Array<StepNode> => {
    const positions = layout(workflow)
    return workflow.steps.map((step) => ({
      id: step.id,
      type: "step",
      position: positions.get(step.id) ?? { x: 0, y: 0 },
      deletable: step.type !== "TRIGGER",
      selected: step.id === selectedId,
      ariaLabel: `${TYPE_LABELS[step.type]} step ${step.name}`,
      data: { step, summary: summaryOf(step), outlets: outletsOf(step.type), current: currentStepIds.has(step.id) }
    }))
  }, [workflow, summaryOf, selectedId, currentStepIds])
  const [nodes, setNodes, onNodesChange] = useNodesState<StepNode>(built)
  useEffect(() => setNodes(built), [built, setNodes])

  const edges = useMemo((): Array<Edge> =>
    workflow.transitions.map((transition) => {
      const label = outletLabel(transition)
      return {
        id: transition.id,
        source: transition.fromStepId,
        target: transition.toStepId,
        sourceHandle: outletOf(transition),
        ariaLabel: `Transition ${label ?? ""} from ${workflow.steps.find((step) => step.id === transition.fromStepId)?.name ?? ""}`,
        markerEnd: { type: MarkerType.ArrowClosed },
        ...(label === undefined ? {} : { label, labelBgPadding: [4, 2] as [number, number], labelStyle: { fontSize: 11, fontWeight: 600 } })
      }
    }), [workflow])

  const connect = (connection: Connection) => {
    const from = workflow.steps.find((step) => step.id === connection.source)
    const outlet = from && outletsOf(from.type).find((candidate) => candidate.id === (connection.sourceHandle ?? "next"))
    if (from && outlet && connection.target) onConnect(from.id, outlet, connection.target)
  }

  return (
    <div className="h-80 overflow-hidden rounded-lg border border-slate-200 bg-white sm:h-[30rem]" data-testid="workflow-graph">
      <ReactFlow
        // Fitted again whenever a step comes or goes.
        key={workflow.steps.length}
        nodes={nodes}
        edges={edges}
        nodeTypes={nodeTypes}
        onNodesChange={onNodesChange}
        onConnect={connect}
        onNodeClick={(_, node) => onSelect(node.id)}
        onPaneClick={() => onSelect(null)}
        onNodeDragStop={(_, node) => onMove(node.id, { x: Math.round(node.position.x), y: Math.round(node.position.y) })}
        onBeforeDelete={async ({ nodes: doomed, edges: doomedEdges }) => {
          // The API decides (a step is spliced, keeping its neighbours connected): nothing leaves the graph before it answers.
          if (doomed.length > 0) doomed.forEach((node) => onDeleteStep(node.data.step))
          else doomedEdges.forEach((edge) => onDeleteTransition(edge.id))
          return false
        }}
        deleteKeyCode={["Delete", "Backspace"]}
        fitView
        fitViewOptions={{ padding: 0.2, maxZoom: 1 }}
        minZoom={0.3}
      >
        <Background />
        <Controls showInteractive={false} />
      </ReactFlow>
    </div>
  )
}
