/**
 * The conversation as the view shows it, built from server frames by a pure reducer.
 *
 * `reduce(state, frame)` returns a new state and never mutates the old one, so components can
 * skip re-rendering what did not change (a step keeps its identity until one of its frames
 * arrives). Text a model streams in a step that then calls a tool is shown as a thought, not as
 * the answer, whichever way the server labelled it.
 */

import type { AgentEvent, ApprovalMode, ConversationTranscript, EventFrame, FileCount, FileDiff, Json, JsonObject, ServerFrame, StepLabel } from "./wire";
import { isObject } from "./wire";

export type ToolStatus = "running" | "awaiting" | "ok" | "failed";

/** A call waiting for (or answered by) a person; shown with its tool call, before the result. */
export interface Approval {
  callId: string;
  name: string;
  operation: string | null;
  args: JsonObject;
  reason: string;
  diffs: FileDiff[];
  /** A person may approve only some of its files (the event's `per_file`); null: not said. */
  perFile: boolean | null;
  resolved: Decision | null;
}

/** How an approval was answered: `by` the person ("user"), the policy, an override, nobody
 * (no one could answer), or "stopped" (the run ended here before anyone did); `reason`: what the person said when they said no ("" when nothing). */
export interface Decision {
  approved: boolean;
  by: string;
  reason: string;
}

export type Item =
  | { type: "step"; key: string; step: number; tokens: number | null; cost: number | null; estimated: boolean }
  | { type: "thought"; key: string; step: number; text: string }
  | { type: "answer"; key: string; step: number; text: string }
  | {
      type: "tool";
      key: string;
      step: number;
      callId: string;
      name: string;
      args: JsonObject | null;
      raw: string;
      added: JsonObject;
      /** How the call reads, as the server described it (null: it did not, e.g. an external agent). */
      label: StepLabel | null;
      status: ToolStatus;
      preview: string;
      result: JsonObject | null;
      source: string;
      durationMs: number | null;
      diffs: FileDiff[];
      /** What came back in a few words, and the files a write changed (null: not said). */
      outcome: string | null;
      files: FileCount[] | null;
      approval: Approval | null;
      /** How the call's approval was answered (also a policy's refusal, which asks no one). */
      decision: Decision | null;
    }
  | ({ type: "approval"; key: string } & Approval)
  | { type: "attached"; key: string; notes: string[]; unknown: string[]; omitted: string[] }
  | { type: "error"; key: string; message: string; source: string };

export interface Run {
  runId: string;
  vaultId: string | null;
  goal: string;
  chips: string[];
  items: Item[];
  status: string;
  startedAt: number;
  finishedAt: number | null;
  totalTokens: number;
  costUsd: number | null;
  finish: { reason: string; message: string; steps: number; undo: boolean } | null;
  changed: string[];
  /** Operations the person allowed for the rest of this run ("tool.operation"). */
  allowed: string[];
  /** The run's change set was undone (here, or before the transcript was read). */
  undone: boolean;
  /** Changed paths that no longer exist in the vault (a stored run read back). */
  gone: string[];
  /** When the run asks for approval (run_started); null: the server did not say. */
  mode: ApprovalMode | null;
  /** Reasons the person typed on this page when rejecting, by call id (until the server's
   * approval_resolved says its own). */
  reasons: Record<string, string>;
}

export interface ViewState {
  runs: Run[];
  /** The server start the runs were followed on (hello's `server_id`; null: not said yet). */
  serverId?: string | null;
}

export const emptyState: ViewState = { runs: [] };

/** What a run that stopped because its server restarted says (its status and summary). */
export const SERVER_RESTARTED = "Stopped: the server restarted.";

const WRITE_PATH_ARGS = ["target", "targets", "destination", "newPath", "path", "FilePath"];
const READ_ONLY_TOOLS = new Set(["obsidian_query_vault", "obsidian_get_context", "GetVaultContext"]);

/** A run the page started: shown at once with the person's message, before any event. */
export function startRun(state: ViewState, runId: string, vaultId: string | null, goal: string, chips: string[], now: number): ViewState {
  // Events can arrive before StartAgent's reply: the run exists then, without the message.
  if (state.runs.some((r) => r.runId === runId)) return mapRun(state, runId, (run) => ({ ...run, goal, chips }));
  return { ...state, runs: [...state.runs, newRun(runId, vaultId, goal, chips, now)] };
}

function newRun(runId: string, vaultId: string | null, goal: string, chips: string[], now: number): Run {
  return {
    runId, vaultId, goal, chips, items: [], status: "Starting", startedAt: now, finishedAt: null,
    totalTokens: 0, costUsd: null, finish: null, changed: [], allowed: [], undone: false, gone: [],
    mode: null, reasons: {},
  };
}

export function allowForRun(state: ViewState, runId: string, operation: string): ViewState {
  return mapRun(state, runId, (run) => (run.allowed.includes(operation) ? run : { ...run, allowed: [...run.allowed, operation] }));
}

/** The reason the person gave on this page for rejecting a call, shown with the refused step. */
export function rememberReason(state: ViewState, callId: string, reason: string): ViewState {
  const run = state.runs.find((r) => r.items.some((it) => (it.type === "tool" || it.type === "approval") && it.callId === callId));
  if (run === undefined) return state;
  return mapRun(state, run.runId, (r) => ({ ...r, reasons: { ...r.reasons, [callId]: reason } }));
}

/** The run's change set was undone: its changed paths no longer name what is in the vault. */
export function markUndone(state: ViewState, runId: string): ViewState {
  return mapRun(state, runId, (run) => (run.undone ? run : { ...run, undone: true }));
}

/** A person's message as the page sent it: the text, then `@"path"` for each attached note. */
export function splitGoal(goal: string): { text: string; chips: string[] } {
  const cut = goal.lastIndexOf("\n\n");
  const tail = cut < 0 ? "" : goal.slice(cut + 2);
  const chips = [...tail.matchAll(/@"([^"]+)"/g)].map((m) => m[1] ?? "");
  if (cut < 0 || chips.length === 0 || tail.replace(/@"[^"]+"/g, "").trim() !== "") return { text: goal, chips: [] };
  return { text: goal.slice(0, cut), chips };
}

/**
 * A stored conversation's runs, rebuilt from their recorded events by the same reducer as live
 * frames, each with its change set's files (what it changed), whether that set was undone and
 * which of its paths are gone. A run this page already follows live is kept as it is. Returns
 * the state and the index of the conversation's first run in it.
 */
export function loadTranscript(state: ViewState, transcript: ConversationTranscript): { state: ViewState; first: number } {
  const live = new Set(state.runs.filter((r) => r.finish === null).map((r) => r.runId));
  const ids = new Set(transcript.runs.map((r) => r.runId));
  const kept = state.runs.filter((r) => !ids.has(r.runId) || live.has(r.runId));
  const loaded: Run[] = [];
  for (const stored of transcript.runs) {
    const current = state.runs.find((r) => r.runId === stored.runId);
    if (current !== undefined && live.has(stored.runId)) {
      loaded.push(current);
      continue;
    }
    const { text, chips } = splitGoal(stored.goal);
    const started = stored.events[0]?.time ?? 0;
    let run = newRun(stored.runId, null, text, chips, started * 1000);
    stored.events.forEach(({ event, time }, seq) => {
      const frame: EventFrame = { type: "event", seq: seq + 1, runId: stored.runId, vaultId: null, event };
      run = applyEvent(run, frame, time * 1000);
    });
    const cs = stored.changeSet;
    if (cs !== null) {
      const paths = cs.files.map((f) => (f.kind === "delete" ? f.from : f.to) ?? "").filter((p) => p !== "");
      const gone = cs.files.filter((f) => !f.exists).map((f) => (f.kind === "delete" ? f.from : f.to) ?? "");
      run = { ...run, changed: [...new Set(paths)], gone: [...new Set(gone)], undone: cs.undoneBy !== null };
    } else {
      run = { ...run, changed: [] };
    }
    if (run.finish === null) run = { ...run, status: "Stopped (the server ended before the run did)" };
    loaded.push(run);
  }
  const rest = kept.filter((r) => !ids.has(r.runId));
  return { state: { ...state, runs: [...rest, ...loaded] }, first: rest.length };
}

export function reduce(state: ViewState, frame: ServerFrame, now: number): ViewState {
  if (frame.type === "hello") return greeted(state, frame.server_id ?? null, now);
  if (frame.type !== "event" || frame.runId === null) return state;
  // When the server said when the event happened, the run's times are its own (not the time
  // this page saw it: a reload or a second tab shows the same elapsed time).
  const at = typeof frame.time === "number" ? frame.time * 1000 : now;
  let next = state;
  if (!state.runs.some((r) => r.runId === frame.runId)) {
    next = { ...state, runs: [...state.runs, newRun(frame.runId, frame.vaultId, "", [], at)] };
  }
  return mapRun(next, frame.runId, (run) => applyEvent(run, frame, at));
}

/**
 * A hello from a server that started since the last one (a new `server_id`): runs are not kept
 * across a restart, so every run still going here stopped with the old server. The new server
 * sends the frames of its own runs right after its hello; none of them is one of these.
 */
function greeted(state: ViewState, serverId: string | null, now: number): ViewState {
  const before = state.serverId ?? null;
  if (serverId === null || serverId === before) return state;
  const runs = before === null ? state.runs : state.runs.map((r) => (r.finish === null ? stopRun(r, SERVER_RESTARTED, now) : r));
  return { ...state, runs, serverId };
}

/** A run ended here, without the server's run_finished (its server restarted, or it no longer
 * runs it): calls still going or waiting are marked as interrupted, its approvals as answered by
 * no one, so nothing on the page waits for it any more. */
export function stopRun(run: Run, message: string, now: number): Run {
  if (run.finish !== null) return run;
  const unanswered: Decision = { approved: false, by: "stopped", reason: "" };
  const items = run.items.map((it): Item => {
    if (it.type === "approval" && it.resolved === null) return { ...it, resolved: unanswered };
    if (it.type !== "tool" || (it.status !== "running" && it.status !== "awaiting")) return it;
    const approval = it.approval !== null && it.approval.resolved === null ? { ...it.approval, resolved: unanswered } : it.approval;
    return { ...it, status: "failed", source: "interrupted", approval };
  });
  const steps = run.items.reduce((n, it) => (it.type === "step" ? Math.max(n, it.step) : n), 0);
  return { ...run, items, status: message, finishedAt: now, finish: { reason: "interrupted", message, steps, undo: false } };
}

/** Stop a run the page follows (see stopRun). */
export function markStopped(state: ViewState, runId: string, message: string, now: number): ViewState {
  return mapRun(state, runId, (run) => stopRun(run, message, now));
}

function mapRun(state: ViewState, runId: string, fn: (run: Run) => Run): ViewState {
  const index = state.runs.findIndex((r) => r.runId === runId);
  const run = state.runs[index];
  if (run === undefined) return state;
  const updated = fn(run);
  if (updated === run) return state;
  const runs = state.runs.slice();
  runs[index] = updated;
  return { ...state, runs };
}

function applyEvent(run: Run, frame: EventFrame, now: number): Run {
  const event: AgentEvent = frame.event;
  const seq = frame.seq;
  switch (event.kind) {
    case "run_started":
      return { ...run, status: "Starting", startedAt: run.items.length ? run.startedAt : now, mode: event.approval_mode ?? null };
    case "context_attached":
      return push(run, {
        type: "attached", key: `a${seq}`, notes: event.notes.map((n) => n.path),
        unknown: event.unknown, omitted: event.omitted,
      }, { chips: run.chips.length ? run.chips : event.notes.map((n) => n.path) });
    case "status":
      return { ...withStep(run, event.step, seq), status: event.message };
    case "thought":
      return appendText(withStep(run, event.step, seq), "thought", event.step, event.text, seq);
    case "text_chunk":
      return appendText(withStep(run, event.step, seq), "answer", event.step, event.text, seq);
    case "usage": {
      const items = run.items.slice();
      for (let i = items.length - 1; i >= 0; i--) {
        const it = items[i];
        if (it?.type === "step" && it.step === event.step) {
          items[i] = { ...it, tokens: event.total_tokens, cost: event.cost_usd ?? null, estimated: event.estimated };
          break;
        }
      }
      const cost = event.run_cost_usd ?? (event.cost_usd != null ? (run.costUsd ?? 0) + event.cost_usd : run.costUsd);
      return { ...run, items, totalTokens: event.run_total_tokens, costUsd: cost };
    }
    case "message": {
      const m = event.message;
      if (run.goal === "" && m["role"] === "user" && typeof m["content"] === "string") {
        return { ...run, goal: m["content"] };
      }
      return run;
    }
    case "tool_call": {
      const base = demoteAnswer(withStep(run, event.step, seq), event.step);
      return push(base, {
        type: "tool", key: `t${event.call_id}`, step: event.step, callId: event.call_id, name: event.name,
        args: event.arguments, raw: event.raw_arguments, added: event.added ?? {}, label: event.label ?? null,
        status: "running", preview: "", result: null, source: "", durationMs: null, diffs: [], outcome: null,
        files: null, approval: null, decision: null,
      });
    }
    case "approval_required": {
      const diffs = event.diffs ?? (event.diff ? [{ path: firstPath(event.arguments) ?? "", diff: event.diff }] : []);
      const approval: Approval = {
        callId: event.call_id, name: event.name, operation: event.operation, args: event.arguments,
        reason: event.reason, diffs, perFile: typeof event.per_file === "boolean" ? event.per_file : null, resolved: null,
      };
      const waiting = { status: "Waiting for your approval" };
      // With its tool call when there is one (so a finished run reads call, approval, result).
      if (run.items.some((it) => it.type === "tool" && it.callId === event.call_id)) {
        return { ...updateTool(run, event.call_id, (t) => ({ ...t, status: "awaiting", approval })), ...waiting };
      }
      return push(run, { type: "approval", key: `p${event.call_id}`, ...approval }, waiting);
    }
    case "approval_resolved": {
      const reason = event.approved ? "" : (event.reason ?? run.reasons[event.call_id] ?? "");
      const resolved: Decision = { approved: event.approved, by: event.by, reason };
      const items = run.items.map((it) =>
        it.type === "approval" && it.callId === event.call_id ? { ...it, resolved } : it,
      );
      const next = updateTool({ ...run, items }, event.call_id, (t) => ({
        ...t, status: event.approved ? "running" : t.status, approval: t.approval ? { ...t.approval, resolved } : null,
        decision: resolved,
      }));
      return { ...next, status: event.approved ? "Running" : "Rejected" };
    }
    case "tool_result": {
      const diffs = event.diffs ?? diffsOf(event.result);
      let changed = run.changed;
      const tool = run.items.find((it) => it.type === "tool" && it.callId === event.call_id);
      if (event.files !== undefined) {
        // What the write changed, as the server counted it: a moved file under its new path.
        for (const f of event.files) {
          if (changed.includes(f.path)) changed = changed.filter((p) => p !== f.from);
          else if (f.from !== undefined && changed.includes(f.from)) changed = changed.map((p) => (p === f.from ? f.path : p));
          else changed = [...changed, f.path];
        }
      } else if (event.success && !READ_ONLY_TOOLS.has(event.name)) {
        // What the tool says it changed (a per-file approval may have left some out), else the
        // paths its arguments name.
        const affected = event.result?.["affectedPaths"];
        const named = Array.isArray(affected)
          ? affected.filter((p): p is string => typeof p === "string")
          : tool?.type === "tool" ? writtenPaths(tool.args) : [];
        const paths = [...diffs.map((d) => d.path), ...named];
        for (const p of paths) if (p && !changed.includes(p)) changed = [...changed, p];
      }
      const next = updateTool(run, event.call_id, (t) => ({
        ...t, status: event.success ? "ok" : "failed", preview: event.preview, result: event.result,
        source: event.source, durationMs: event.duration_ms, diffs, outcome: event.outcome ?? null,
        files: event.files ?? null,
      }));
      return { ...next, changed };
    }
    case "error":
      return push(run, { type: "error", key: `e${seq}`, message: event.message, source: event.source });
    case "run_finished":
      return {
        ...run,
        status: event.message,
        finishedAt: now,
        totalTokens: Math.max(run.totalTokens, event.total_tokens),
        costUsd: event.cost_usd ?? run.costUsd,
        finish: { reason: event.reason, message: event.message, steps: event.steps, undo: event.undo === true },
      };
    default:
      return run;
  }
}

function push(run: Run, item: Item, extra: Partial<Run> = {}): Run {
  return { ...run, ...extra, items: [...run.items, item] };
}

/** A step divider (which carries the step's tokens) before the first item of each step. */
function withStep(run: Run, step: number, seq: number): Run {
  for (let i = run.items.length - 1; i >= 0; i--) {
    const it = run.items[i];
    if (it?.type === "step") {
      if (it.step === step) return run;
      break;
    }
  }
  return push(run, { type: "step", key: `s${step}-${seq}`, step, tokens: null, cost: null, estimated: false });
}

function appendText(run: Run, type: "thought" | "answer", step: number, text: string, seq: number): Run {
  const last = run.items[run.items.length - 1];
  if (last !== undefined && last.type === type && last.step === step) {
    const items = run.items.slice();
    items[items.length - 1] = { ...last, text: last.text + text };
    return { ...run, items };
  }
  return push(run, { type, key: `${type[0]}${seq}`, step, text });
}

/** Text streamed before a tool call in the same step was the model thinking aloud. */
function demoteAnswer(run: Run, step: number): Run {
  let items: Item[] | null = null;
  // Only the current step's items can hold its answer: scan back to its divider, not the run.
  for (let i = run.items.length - 1; i >= 0; i--) {
    const it = run.items[i];
    if (it === undefined || (it.type === "step" && it.step !== step)) break;
    if (it.type === "answer" && it.step === step) {
      items ??= run.items.slice();
      items[i] = { type: "thought", key: it.key, step, text: it.text };
    }
  }
  return items === null ? run : { ...run, items };
}

function updateTool(run: Run, callId: string, fn: (t: Extract<Item, { type: "tool" }>) => Item): Run {
  const index = run.items.findIndex((it) => it.type === "tool" && it.callId === callId);
  const it = run.items[index];
  if (it === undefined || it.type !== "tool") return run;
  const items = run.items.slice();
  items[index] = fn(it);
  return { ...run, items };
}

function firstPath(args: JsonObject | null): string | null {
  return writtenPaths(args)[0] ?? null;
}

function writtenPaths(args: JsonObject | null): string[] {
  const out: string[] = [];
  for (const name of WRITE_PATH_ARGS) {
    const value: Json | undefined = args?.[name];
    for (const v of Array.isArray(value) ? value : [value]) if (typeof v === "string" && v) out.push(v);
  }
  return out;
}

/** Unified diffs a result carries: `diff` with `path`, `diffs` as a list or a path → diff map. */
export function diffsOf(result: JsonObject | null): FileDiff[] {
  if (result === null) return [];
  const out: FileDiff[] = [];
  const one = result["diff"];
  if (typeof one === "string" && one) out.push({ path: typeof result["path"] === "string" ? result["path"] : "", diff: one });
  const many = result["diffs"];
  if (Array.isArray(many)) {
    for (const d of many) if (isObject(d) && typeof d["diff"] === "string") out.push({ path: String(d["path"] ?? ""), diff: d["diff"] });
  } else if (isObject(many)) {
    for (const [path, d] of Object.entries(many)) if (typeof d === "string") out.push({ path, diff: d });
  }
  return out;
}

export function isRunning(run: Run): boolean {
  return run.finish === null;
}
