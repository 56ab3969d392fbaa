/**
 * A Connection over the server's WebSocket (`/ws`, same origin) plus two GETs (`/vaults`,
 * `/conversations`). The socket authenticates with the page's session (a cookie, sent by the
 * browser, and the page secret beside it: pageSecret.ts) or, after the sign-in panel, with an
 * `Authenticate {key}` first frame: the key never goes into a URL. A socket that closes is
 * reopened with a growing delay (up to 5 s), except when the server refused the key. Signing out (`POST /logout`) ends the cookie's session,
 * forgets the key and closes the socket without reopening it.
 *
 * Resuming: the server sends a new socket the frames of the runs still going (same `seq`), so a
 * page that reloads mid-run picks the run up. A socket that reopens gets those again: frames
 * whose `seq` the page has already seen from the same server start (hello's `server_id`) are
 * dropped, so nothing is applied twice. Frames that arrive before the view subscribes are kept
 * for its first subscriber.
 */

import { type Connection, type ConnectionState, localFailure, modelSetupFrom, nextId, transcriptFrom } from "./connection";
import { forgetPageSecret, pageSecret } from "./pageSecret";
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

const CLOSE_UNAUTHORIZED = 4401;
const SUBPROTOCOL = "vaultpilot";
const PAGE_SUBPROTOCOL = "vaultpilot.page.";
const PAGE_HEADER = "X-Vaultpilot-Page";
// The server waits for Authenticate this long before closing; a page without a key should not.
const HELLO_WAIT_MS = 1500;
// A handshake that neither opens nor fails (a stalled server, a half-open socket) is given up
// after this long and tried again, so the page never sits at "Connecting…" for good.
const CONNECT_WAIT_MS = 4000;

export function connectWebSocket(url: string): Connection {
  const stateListeners = new Set<(s: ConnectionState, detail: string) => void>();
  const frameListeners = new Set<(f: ServerFrame) => void>();
  const pending = new Map<string, (r: ReplyFrame) => void>();
  let socket: WebSocket | null = null;
  let state: ConnectionState = "connecting";
  let hello: HelloFrame | null = null;
  let key: string | null = null;
  let retryMs = 250;
  let helloTimer: number | undefined;
  let serverId: string | null = null;
  let lastSeq = 0;
  let early: ServerFrame[] | null = [];

  function setState(next: ConnectionState, detail = ""): void {
    state = next;
    for (const l of stateListeners) l(next, detail);
  }

  function failPending(message: string): void {
    for (const [id, resolve] of pending) {
      resolve({ ...localFailure("", "unavailable", message), id });
    }
    pending.clear();
  }

  /** The headers of a GET or POST: the key typed into this page, or the page secret that goes
   * with the session cookie (the browser adds the cookie itself). */
  function headers(): Record<string, string> {
    const out: Record<string, string> = { Accept: "application/json" };
    const secret = pageSecret();
    if (key !== null) out["Authorization"] = `Bearer ${key}`;
    else if (secret !== null) out[PAGE_HEADER] = secret;
    return out;
  }

  function open(): void {
    // The server selects "vaultpilot" and never echoes the page secret's subprotocol. A typed
    // key signs the socket in by itself (its Authenticate frame), as in headers().
    const secret = key === null ? pageSecret() : null;
    const ws = new WebSocket(url, secret === null ? [SUBPROTOCOL] : [SUBPROTOCOL, PAGE_SUBPROTOCOL + secret]);
    socket = ws;
    hello = null;
    setState("connecting");
    const opening = window.setTimeout(() => {
      if (ws.readyState === WebSocket.CONNECTING) ws.close();
    }, CONNECT_WAIT_MS);
    ws.onopen = () => {
      window.clearTimeout(opening);
      if (key !== null) {
        ws.send(JSON.stringify({ id: nextId("auth"), commandName: "Authenticate", arguments: { key }, timestamp: Date.now() }));
        // A key was sent: the server answers with hello, or closes with 4401. Silence means
        // the socket is stuck; start again.
        helloTimer = window.setTimeout(() => {
          if (hello === null) ws.close();
        }, CONNECT_WAIT_MS);
      } else {
        helloTimer = window.setTimeout(() => {
          if (hello === null) setState("signin", "");
        }, HELLO_WAIT_MS);
      }
    };
    ws.onmessage = (message: MessageEvent) => {
      let frame: unknown;
      try {
        frame = JSON.parse(String(message.data));
      } catch {
        return; // the server sends JSON only; anything else is not ours to show
      }
      if (!isObject(frame) || typeof frame["type"] !== "string") return;
      const typed = frame as unknown as ServerFrame;
      if (typed.type === "hello") {
        window.clearTimeout(helloTimer);
        const id = typeof typed.server_id === "string" ? typed.server_id : null;
        if (id !== serverId) lastSeq = 0; // a restarted server counts from 1 again
        serverId = id;
        hello = typed;
        retryMs = 250;
        setState("open");
      } else if (typed.type === "reply" && typed.id !== null && pending.has(typed.id)) {
        const resolve = pending.get(typed.id);
        pending.delete(typed.id);
        resolve?.(typed);
      } else if (typed.type === "reply" && typed.error?.code === "unauthorized") {
        key = null;
        setState("signin", typed.error.message);
      }
      if ((typed.type === "event" || typed.type === "status") && typeof typed.seq === "number") {
        if (typed.seq <= lastSeq) return; // seen before this socket reopened
        lastSeq = typed.seq;
      }
      if (early !== null) {
        if (early.length < 100000) early.push(typed);
        return;
      }
      for (const l of frameListeners) l(typed);
    };
    ws.onclose = (event: CloseEvent) => {
      window.clearTimeout(helloTimer);
      window.clearTimeout(opening);
      if (socket !== ws) return;
      socket = null;
      failPending("The connection to the server closed; the command may not have run.");
      if (event.code === CLOSE_UNAUTHORIZED) {
        key = null;
        setState("signin", event.reason === "unauthorized" ? "" : event.reason);
        return;
      }
      setState("closed", `Reconnecting in ${Math.round(retryMs / 100) / 10} s…`);
      window.setTimeout(open, retryMs);
      retryMs = Math.min(retryMs * 2, 5000);
    };
  }

  async function getJson(path: string): Promise<unknown> {
    const response = await fetch(path, { credentials: "same-origin", headers: headers() });
    if (!response.ok) throw new Error(`${path}: HTTP ${response.status}`);
    return response.json();
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
      return () => stateListeners.delete(listener);
    },
    subscribe(listener) {
      frameListeners.add(listener);
      if (early !== null) {
        const kept = early;
        early = null;
        for (const f of kept) listener(f);
      }
      return () => frameListeners.delete(listener);
    },
    send(commandName: string, args: JsonObject): Promise<ReplyFrame> {
      const ws = socket;
      if (ws === null || ws.readyState !== WebSocket.OPEN || hello === null) {
        return Promise.resolve(
          localFailure(commandName, "unavailable", "Not connected to the server; wait for it to come back and try again."),
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
      return (hello?.vaults ?? []).map((id) => ({ vaultId: id, name: id, embedding: unknownCoverage() }));
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
        const response = await fetch(path, { credentials: "same-origin", headers: headers() });
        return transcriptFrom(response.status, await response.json());
      } catch {
        return { error: "The server could not be reached; try again once it is back." };
      }
    },
    async modelSetup(): Promise<ModelSetup | null> {
      try {
        return modelSetupFrom(await getJson("model-setup"));
      } catch {
        return null;
      }
    },
    signIn(newKey: string) {
      key = newKey;
      const old = socket;
      socket = null; // its close must not schedule a second reconnect
      old?.close();
      open();
    },
    async signOut(): Promise<string | null> {
      // POST /logout ends the cookie's session on the server and clears the cookie; a key typed
      // into this page is only forgotten. 401: the server no longer knew this page, so it is
      // signed out all the same.
      let status: number;
      try {
        status = (await fetch("logout", { method: "POST", credentials: "same-origin", headers: headers() })).status;
      } catch {
        return "The server could not be reached, so this page is still signed in; try again once it is back.";
      }
      if (status !== 200 && status !== 401) {
        return `The server did not sign this page out (HTTP ${status}); try again, or close the browser to end the session.`;
      }
      key = null;
      forgetPageSecret();
      const old = socket;
      socket = null; // no reconnect: the next socket opens when the person signs in again
      window.clearTimeout(helloTimer);
      old?.close();
      hello = null;
      failPending("Signed out; the command may not have run.");
      setState("signin", "");
      return null;
    },
  };
}

function unknownCoverage() {
  return { state: "unknown", chunksEmbedded: 0, chunks: 0, notesPending: 0, model: null, rate: 0, problem: null };
}
