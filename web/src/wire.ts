/**
 * The server's WebSocket frames as TypeScript types (src/vaultpilot/server/ws.py and
 * src/vaultpilot/agent/events.py are the source of truth; tests/server/snapshots pins them).
 *
 * Frames from the server carry `type`: hello, reply, event, status, command. Agent events
 * inside `event` frames carry `kind`. Fields the server may add later (cost, diffs, undo) are
 * optional here, so the view shows them as soon as they arrive and works without them; so are
 * the step's label, outcome and line counts, which an external agent's events do not carry.
 */

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

export interface ErrorInfo {
  code: string;
  message: string;
}

export interface HelloFrame {
  type: "hello";
  seq?: number;
  server: string;
  version: string;
  vaults: string[];
  role: string;
  /** Commands the server takes; the view offers Undo only when "UndoRun" is among them. */
  commands?: string[];
  /** The configured model, or null when none is (then the no-model panel shows at once). */
  model?: string | null;
  /** Random per server start: `seq` numbers restart when it changes. */
  server_id?: string;
}

export interface ReplyFrame {
  type: "reply";
  id: string | null;
  commandName: string | null;
  success: boolean;
  result: Json;
  error: ErrorInfo | null;
}

export interface EventFrame {
  type: "event";
  seq: number;
  /** When the event happened (seconds since the epoch), when the server says. */
  time?: number;
  runId: string | null;
  vaultId: string | null;
  event: AgentEvent;
}

export interface StatusFrame {
  type: "status";
  seq: number;
  vaultId: string | null;
  status: string;
  message: string;
  source?: string;
  time?: number;
}

export interface CommandFrame {
  type: "command";
  seq: number;
  id: string;
  commandName: string;
  arguments: JsonObject;
}

export type ServerFrame = HelloFrame | ReplyFrame | EventFrame | StatusFrame | CommandFrame;

/** One file's change as a unified diff (approvals and results may carry these). */
export interface FileDiff {
  path: string;
  diff: string;
  /** A move's two paths (a link rewrite elsewhere has from === to). */
  from?: string | null;
  to?: string | null;
}

/** How a tool call reads (src/vaultpilot/agent/steps.py): `Edit` `Inbox.md`, its kind's icon. */
export interface StepLabel {
  kind: "read" | "search" | "edit" | "create" | "move" | "delete" | "other";
  verb: string;
  object: string;
  object_is_path: boolean;
}

/** One file a write changed, with its line counts; `from` when it was moved. */
export interface FileCount {
  path: string;
  added: number;
  removed: number;
  from?: string;
}

/** When a run asks: read-only (nothing may change), ask (every change), auto (as the approval
 * rules say: destructive steps), auto-approve (nothing asks). */
export type ApprovalMode = "read-only" | "ask" | "auto" | "auto-approve";

export type AgentEvent =
  | {
      kind: "run_started";
      run_id: string;
      model: string;
      tools: string[];
      max_steps: number;
      token_budget: number | null;
      approval_mode?: ApprovalMode;
    }
  | {
      kind: "context_attached";
      notes: { mention: string; path: string; tokens: number; truncated: boolean }[];
      unknown: string[];
      omitted: string[];
    }
  | { kind: "status"; message: string; step: number }
  | { kind: "thought"; text: string; step: number }
  | { kind: "text_chunk"; text: string; step: number }
  | {
      kind: "usage";
      step: number;
      prompt_tokens: number;
      completion_tokens: number;
      total_tokens: number;
      run_total_tokens: number;
      estimated: boolean;
      cost_usd?: number | null;
      run_cost_usd?: number | null;
    }
  | { kind: "message"; message: JsonObject }
  | {
      kind: "tool_call";
      call_id: string;
      name: string;
      arguments: JsonObject | null;
      raw_arguments: string;
      step: number;
      added?: JsonObject;
      label?: StepLabel;
    }
  | {
      kind: "approval_required";
      call_id: string;
      name: string;
      operation: string | null;
      arguments: JsonObject;
      reason: string;
      diff?: string;
      diffs?: FileDiff[];
      /** A person may approve only some of the files (the operation's `per_file` fact), when
       * the server says; otherwise the page judges by the step's kind. */
      per_file?: boolean;
    }
  | {
      kind: "approval_resolved";
      call_id: string;
      approved: boolean;
      by: "user" | "policy" | "override" | "nobody";
      /** The reason the person gave for saying no (when the server passes it on). */
      reason?: string;
    }
  | {
      kind: "tool_result";
      call_id: string;
      name: string;
      success: boolean;
      result: JsonObject;
      preview: string;
      source: string;
      duration_ms: number;
      diffs?: FileDiff[];
      outcome?: string;
      files?: FileCount[];
    }
  | { kind: "error"; message: string; source: "model" | "tool" | "internal" }
  | {
      kind: "run_finished";
      reason: "done" | "interrupted" | "max_steps" | "budget" | "error";
      steps: number;
      prompt_tokens: number;
      completion_tokens: number;
      total_tokens: number;
      text: string;
      message: string;
      cost_usd?: number | null;
      undo?: boolean;
    };

/** Semantic-search coverage of a vault, as GET /vaults gives it. */
export interface EmbeddingInfo {
  state: string;
  chunksEmbedded: number;
  chunks: number;
  notesPending: number;
  model: string | null;
  rate: number;
  problem: string | null;
}

export interface VaultInfo {
  vaultId: string;
  name: string;
  embedding: EmbeddingInfo;
}

export interface ConversationSummary {
  id: string;
  title: string;
  updated: number;
  running?: boolean;
}

export function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** One file of a stored run's change set (GET /conversations/{id}). */
export interface TranscriptFile {
  kind: string;
  operation: string;
  from: string | null;
  to: string | null;
  /** The file is in the vault now. */
  exists: boolean;
}

export interface TranscriptRun {
  runId: string;
  goal: string;
  events: { event: AgentEvent; time: number }[];
  changeSet: { id: string; summary: string; files: TranscriptFile[]; undoneBy: string | null } | null;
}

/** A stored conversation read back, run by run (GET /conversations/{id}). */
export interface ConversationTranscript {
  id: string;
  title: string;
  updated: number;
  runs: TranscriptRun[];
}

/** The built-in agent's model (null: none) and the config file the server reads. */
export interface ModelSetup {
  model: string | null;
  configPath: string;
}
