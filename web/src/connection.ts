/**
 * The connection a view is mounted with. The web page passes a WebSocket connection to the
 * server (wsConnection.ts); the Obsidian plugin can pass its own. Components never open sockets
 * or call fetch themselves: everything they send or receive goes through this interface.
 */

import type {
  ConversationSummary,
  ConversationTranscript,
  HelloFrame,
  ModelSetup,
  JsonObject,
  ReplyFrame,
  ServerFrame,
  VaultInfo,
} from "./wire";
import { isObject } from "./wire";

/**
 * connecting: not yet greeted by the server; open: greeted (hello received);
 * signin: the server wants a key or a login link before it says hello; closed: gone, retrying.
 */
export type ConnectionState = "connecting" | "open" | "signin" | "closed";

export interface Connection {
  /** The current state and, once open, the server's hello. */
  readonly state: ConnectionState;
  readonly hello: HelloFrame | null;
  onState(listener: (state: ConnectionState, detail: string) => void): () => void;
  /** Every frame the server pushes (events, statuses, replies), in order. */
  subscribe(listener: (frame: ServerFrame) => void): () => void;
  /** Send one IToolCommand; resolves with its reply (never rejects: failures are replies). */
  send(commandName: string, args: JsonObject): Promise<ReplyFrame>;
  /** The vaults with their semantic-search coverage (hello's ids when coverage is unknown). */
  vaults(): Promise<VaultInfo[]>;
  /** Past conversations of a vault; null when the server does not keep them. */
  conversations(vaultId: string): Promise<ConversationSummary[] | null>;
  /** A stored conversation, run by run, or why it could not be read. */
  conversation(vaultId: string, id: string): Promise<ConversationTranscript | { error: string }>;
  /** The model and the config file the server reads; null when the server does not say. */
  modelSetup(): Promise<ModelSetup | null>;
  /** Trade an API key for a session (used by the sign-in panel). */
  signIn(key: string): void;
  /** Where a key typed into the sign-in panel is kept, said under it (default: this page only). */
  readonly keyKept?: string;
  /**
   * End this page's session and forget its key; on success the state becomes "signin" and
   * this resolves with null, otherwise with why not (the page stays signed in). Absent when the
   * host has its own connection settings (the Obsidian plugin): the view then offers no sign-out.
   */
  signOut?(): Promise<string | null>;
}

let counter = 0;

/** A command id unique within this page. */
export function nextId(prefix = "c"): string {
  counter += 1;
  return `${prefix}${Date.now().toString(36)}${counter}`;
}

/** A stored conversation from the server's answer (HTTP status and JSON body), or why not. */
export function transcriptFrom(status: number, data: unknown): ConversationTranscript | { error: string } {
  if (status === 200 && isObject(data) && Array.isArray(data["runs"])) return data as unknown as ConversationTranscript;
  const error = isObject(data) && isObject(data["error"]) ? data["error"]["message"] : null;
  return { error: typeof error === "string" ? error : `The server answered HTTP ${status}.` };
}

/** The model setup from the server's JSON, or null when it does not say. */
export function modelSetupFrom(data: unknown): ModelSetup | null {
  return isObject(data) && typeof data["configPath"] === "string" ? (data as unknown as ModelSetup) : null;
}

/** A reply for a failure that happened on our side of the wire (socket closed, ...). */
export function localFailure(commandName: string, code: string, message: string): ReplyFrame {
  return { type: "reply", id: null, commandName, success: false, result: null, error: { code, message } };
}
