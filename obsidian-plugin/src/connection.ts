/**
 * The plugin's Connection (web/src/connection.ts) to `vaultpilot serve`: a WebSocket to `/ws`
 * and GETs through Obsidian's `requestUrl` (the server sends no CORS headers, so the page's own
 * fetch could not read them).
 *
 * Contract:
 * - The key goes in an `Authenticate {key}` first frame, never in the URL. A refused key (a
 *   failed reply or close 4401) puts the connection in `signin` and it stays there until
 *   `signIn(key)`: retrying a wrong key would only repeat the refusal.
 * - Without a key it does not connect at all: it is in `signin` with where to find the key.
 * - A socket that fails or closes is reopened after a delay that doubles from `retryMs` up to
 *   `maxRetryMs`; a hello resets it. While closed, the state's detail says how to start the
 *   server (`down()`), so the view tells the person what to do while it keeps trying.
 * - `close()` ends it for good: no timer and no socket survive it.
 * - Commands sent while not connected resolve at once with an `unavailable` reply; commands in
 *   flight when the socket closes resolve the same way (they may or may not have run).
 * - A reopened socket gets the frames of the runs still going again (same `seq`): those already
 *   seen from the same server start (hello's `server_id`) are dropped, so nothing is applied
 *   twice; a new `server_id` counts from 1 again, and the view stops the runs it followed
 *   (a restarted server does not know them).
 */

import {
  type Connection,
  type ConnectionState,
  localFailure,
  modelSetupFrom,
  nextId,
  transcriptFrom,
} from "../../web/src/connection";
import type {
  ConversationSummary,
  ConversationTranscript,
  HelloFrame,
  JsonObject,
  ModelSetup,
  ReplyFrame,
  ServerFrame,
  VaultInfo,
} from "../../web/src/wire";
import { isObject } from "../../web/src/wire";
import type { HttpGet } from "./server";
import { keyMessage } from "./server";

/** The part of the WebSocket API used here (the browser's, or `ws` in tests). */
export interface SocketLike {
  readonly readyState: number;
  onopen: ((ev: unknown) => void) | null;
  onmessage: ((ev: { data: unknown }) => void) | null;
  onclose: ((ev: { code: number; reason: string }) => void) | null;
  onerror: ((ev: unknown) => void) | null;
  send(data: string): void;
  close(code?: number, reason?: string): void;
}
export type SocketFactory = (url: string) => SocketLike;

export interface ServerConnection extends Connection {
  /** Stop for good (the view closed or the plugin unloads). */
  close(): void;
}

export interface ConnectOptions {
  base: string;
  wsUrl: string;
  key: string;
  socket: SocketFactory;
  get: HttpGet;
  /** What to show while the server does not answer (how to start it). */
  down: () => string;
  /** Called with a key typed in the view's sign-in panel, so the plugin can store it. */
  onKey?: (key: string) => void;
  retryMs?: number;
  maxRetryMs?: number;
}

const OPEN = 1;
const CLOSE_UNAUTHORIZED = 4401;

export function connectServer(options: ConnectOptions): ServerConnection {
  const stateListeners = new Set<(s: ConnectionState, detail: string) => void>();
  const frameListeners = new Set<(f: ServerFrame) => void>();
  const pending = new Map<string, (r: ReplyFrame) => void>();
  const firstRetry = options.retryMs ?? 500;
  const maxRetry = options.maxRetryMs ?? 10_000;
  let key = options.key;
  let socket: SocketLike | null = null;
  let state: ConnectionState = "connecting";
  let detail = "";
  let hello: HelloFrame | null = null;
  let retryMs = firstRetry;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let ended = false;
  let serverId: string | null = null;
  let lastSeq = 0;

  function setState(next: ConnectionState, text = ""): void {
    state = next;
    detail = text;
    for (const l of stateListeners) l(next, text);
  }

  function failPending(): void {
    for (const [id, resolve] of pending) {
      resolve({ ...localFailure("", "unavailable", "The connection to the server closed; the command may not have run."), id });
    }
    pending.clear();
  }

  function drop(): void {
    clearTimeout(timer);
    timer = undefined;
    const old = socket;
    socket = null; // its close event must not schedule a reconnect
    hello = null;
    if (old) {
      old.onopen = old.onmessage = old.onerror = old.onclose = null;
      try {
        old.close();
      } catch {
        // closing a socket that never opened can throw in some implementations; it is gone either way
      }
    }
    failPending();
  }

  function refuse(message: string): void {
    drop();
    setState("signin", message);
  }

  function retry(): void {
    const seconds = Math.round(retryMs / 100) / 10;
    setState("closed", `${options.down()} (retrying in ${seconds} s)`);
    timer = setTimeout(open, retryMs);
    retryMs = Math.min(retryMs * 2, maxRetry);
  }

  function open(): void {
    if (ended) return;
    drop();
    if (!key) {
      setState("signin", keyMessage(false));
      return;
    }
    setState("connecting");
    let ws: SocketLike;
    try {
      ws = options.socket(options.wsUrl);
    } catch {
      retry();
      return;
    }
    socket = ws;
    const authId = nextId("auth");
    ws.onopen = () => {
      ws.send(JSON.stringify({ id: authId, commandName: "Authenticate", arguments: { key }, timestamp: Date.now() }));
    };
    ws.onmessage = (message) => {
      if (socket !== ws) return;
      let frame: unknown;
      try {
        frame = JSON.parse(String(message.data));
      } catch {
        return; // the server sends JSON only
      }
      if (!isObject(frame) || typeof frame["type"] !== "string") return;
      const typed = frame as unknown as ServerFrame;
      if (typed.type === "reply" && typed.id === authId) {
        if (!typed.success) refuse(keyMessage(true));
        return;
      }
      if (typed.type === "hello") {
        const id = typeof typed.server_id === "string" ? typed.server_id : null;
        if (id !== serverId) lastSeq = 0; // a restarted server counts from 1 again
        serverId = id;
        hello = typed;
        retryMs = firstRetry;
        setState("open");
      } else if (typed.type === "reply" && typed.id !== null && pending.has(typed.id)) {
        const resolve = pending.get(typed.id);
        pending.delete(typed.id);
        resolve?.(typed);
      }
      if ((typed.type === "event" || typed.type === "status") && typeof typed.seq === "number") {
        if (typed.seq <= lastSeq) return; // seen before this socket reopened
        lastSeq = typed.seq;
      }
      for (const l of frameListeners) l(typed);
    };
    ws.onerror = () => {
      // A close event always follows; the retry is scheduled there.
    };
    ws.onclose = (event) => {
      if (socket !== ws) return;
      socket = null;
      hello = null;
      failPending();
      if (event.code === CLOSE_UNAUTHORIZED) {
        setState("signin", keyMessage(true));
        return;
      }
      retry();
    };
  }

  async function getJson(path: string): Promise<unknown> {
    const answer = await options.get(`${options.base}/${path}`, { Accept: "application/json", Authorization: `Bearer ${key}` });
    if (answer.status !== 200) throw new Error(`${path}: HTTP ${answer.status}`);
    return answer.json;
  }

  open();

  return {
    get state() {
      return state;
    },
    get hello() {
      return hello;
    },
    onState(listener) {
      stateListeners.add(listener);
      // A listener added late (the view mounts after the first state) learns the detail too.
      if (detail) listener(state, detail);
      return () => stateListeners.delete(listener);
    },
    subscribe(listener) {
      frameListeners.add(listener);
      return () => frameListeners.delete(listener);
    },
    send(commandName: string, args: JsonObject): Promise<ReplyFrame> {
      const ws = socket;
      if (ws === null || ws.readyState !== OPEN || hello === null) {
        return Promise.resolve(
          localFailure(commandName, "unavailable", "Not connected to the vaultpilot server; wait for it to come back and try again."),
        );
      }
      const id = nextId();
      return new Promise((resolve) => {
        pending.set(id, resolve);
        ws.send(JSON.stringify({ id, commandName, arguments: args, timestamp: Date.now() }));
      });
    },
    async vaults(): Promise<VaultInfo[]> {
      try {
        const data = await getJson("vaults");
        if (Array.isArray(data)) return data as VaultInfo[];
      } catch {
        // Coverage is a nicety: without it the switcher still lists the vaults hello named.
      }
      return (hello?.vaults ?? []).map((id) => ({
        vaultId: id, name: id,
        embedding: { state: "unknown", chunksEmbedded: 0, chunks: 0, notesPending: 0, model: null, rate: 0, problem: null },
      }));
    },
    async conversations(vaultId: string): Promise<ConversationSummary[] | null> {
      try {
        const data = await getJson(`conversations?vaultId=${encodeURIComponent(vaultId)}`);
        return Array.isArray(data) ? (data as ConversationSummary[]) : null;
      } catch {
        return null;
      }
    },
    async conversation(vaultId: string, id: string): Promise<ConversationTranscript | { error: string }> {
      const path = `conversations/${encodeURIComponent(id)}?vaultId=${encodeURIComponent(vaultId)}`;
      try {
        const answer = await options.get(`${options.base}/${path}`, { Accept: "application/json", Authorization: `Bearer ${key}` });
        return transcriptFrom(answer.status, answer.json);
      } catch {
        return { error: "The vaultpilot server could not be reached; try again once it is back." };
      }
    },
    async modelSetup(): Promise<ModelSetup | null> {
      try {
        return modelSetupFrom(await getJson("model-setup"));
      } catch {
        return null;
      }
    },
    keyKept: "The key is saved in this plugin's settings (shown masked there).",
    signIn(newKey: string) {
      key = newKey.trim();
      options.onKey?.(key);
      retryMs = firstRetry;
      open();
    },
    close() {
      ended = true;
      drop();
      stateListeners.clear();
      frameListeners.clear();
    },
  };
}

export type ProbeResult = { kind: "ok"; hello: HelloFrame } | { kind: "key" } | { kind: "refused"; timedOut: boolean };

/**
 * One WebSocket handshake for "Test connection": authenticate, wait for hello, close. A socket
 * that closes before hello (the server refused the handshake: a foreign origin) is `refused`.
 */
export function probeSocket(socket: SocketFactory, url: string, key: string, timeoutMs = 5000): Promise<ProbeResult> {
  return new Promise((resolve) => {
    let ws: SocketLike;
    let done = false;
    const finish = (result: ProbeResult) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      ws.onopen = ws.onmessage = ws.onerror = ws.onclose = null;
      try {
        ws.close();
      } catch {
        // already closed
      }
      resolve(result);
    };
    const timer = setTimeout(() => finish({ kind: "refused", timedOut: true }), timeoutMs);
    try {
      ws = socket(url);
    } catch {
      clearTimeout(timer);
      resolve({ kind: "refused", timedOut: false });
      return;
    }
    ws.onopen = () => ws.send(JSON.stringify({ id: nextId("probe"), commandName: "Authenticate", arguments: { key }, timestamp: Date.now() }));
    ws.onmessage = (message) => {
      let frame: unknown;
      try {
        frame = JSON.parse(String(message.data));
      } catch {
        return;
      }
      if (!isObject(frame)) return;
      if (frame["type"] === "hello") finish({ kind: "ok", hello: frame as unknown as HelloFrame });
      else if (frame["type"] === "reply" && frame["success"] === false) finish({ kind: "key" });
    };
    ws.onerror = () => undefined;
    ws.onclose = (event) => finish(event.code === CLOSE_UNAUTHORIZED ? { kind: "key" } : { kind: "refused", timedOut: false });
  });
}
