/**
 * A local stand-in for `vaultpilot serve`, speaking the same wire protocol over a real socket:
 * `GET /vaults` with a Bearer key (401 otherwise), `/ws` with an `Authenticate {key}` first frame
 * (a wrong key gets a failed reply and close 4401), then hello and a reply per command. Tests
 * push agent events with `emit`, read the commands the plugin sent in `received`, and stop and
 * start it on the same port to exercise reconnection. `refuseSockets` mimics a server that
 * refuses Obsidian's origin (the handshake fails while HTTP works).
 */

import { type IncomingMessage, type Server, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { WebSocket, WebSocketServer } from "ws";

export interface FakeServerOptions {
  key?: string;
  vaults?: { vaultId: string; name: string; path?: string }[];
  commands?: string[];
  refuseSockets?: boolean;
  /** Said in hello as `server_id` (random per start in the real server); `restart()` changes it. */
  serverId?: string;
  /** Send a new socket every frame emitted so far after its hello, as the real server sends
   * the frames of the runs still going. */
  replay?: boolean;
}

export interface Received {
  commandName: string;
  arguments: Record<string, unknown>;
}

export class FakeServer {
  readonly received: Received[] = [];
  readonly sockets = new Set<WebSocket>();
  port = 0;
  private http: Server | null = null;
  private wss: WebSocketServer | null = null;
  private seq = 0;
  private backlog: string[] = [];
  private serverId: string | undefined;

  constructor(readonly options: FakeServerOptions = {}) {
    this.serverId = options.serverId;
  }

  /** Stop and start again on the same port as a new server start: runs and frames are gone,
   * `seq` counts from 1, hello says a new `server_id`. */
  async restart(): Promise<void> {
    await this.stop();
    this.seq = 0;
    this.backlog = [];
    this.serverId = `${this.serverId ?? "start"}+`;
    await this.start(this.port);
  }

  /** Close every socket without stopping (a network blip): the plugin reconnects. */
  drop(): void {
    for (const ws of this.sockets) ws.terminate();
    this.sockets.clear();
  }

  get key(): string {
    return this.options.key ?? "k".repeat(43);
  }

  get base(): string {
    return `127.0.0.1:${this.port}`;
  }

  async start(port = this.port): Promise<void> {
    const wss = new WebSocketServer({ noServer: true });
    const http = createServer((req, res) => this.onRequest(req, res));
    http.on("upgrade", (req, socket, head) => {
      if (this.options.refuseSockets || req.url !== "/ws") {
        socket.end("HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n");
        return;
      }
      wss.handleUpgrade(req, socket, head, (ws) => this.onSocket(ws));
    });
    await new Promise<void>((resolve) => http.listen(port, "127.0.0.1", resolve));
    this.port = (http.address() as AddressInfo).port;
    this.http = http;
    this.wss = wss;
  }

  async stop(): Promise<void> {
    for (const ws of this.sockets) ws.terminate();
    this.sockets.clear();
    this.wss?.close();
    const http = this.http;
    this.http = null;
    if (http) await new Promise<void>((resolve) => http.close(() => resolve()));
  }

  /** Push an agent event to every authenticated socket. */
  emit(runId: string, event: Record<string, unknown>, vaultId = "notes"): void {
    this.seq += 1;
    const frame = JSON.stringify({ type: "event", seq: this.seq, runId, vaultId, event });
    this.backlog.push(frame);
    for (const ws of this.sockets) ws.send(frame);
  }

  private onRequest(req: IncomingMessage, res: import("node:http").ServerResponse): void {
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify(body));
    };
    if (req.headers.authorization !== `Bearer ${this.key}`) {
      send(401, { success: false, error: { code: "unauthorized", message: "Wrong API key." } });
    } else if (req.url === "/vaults") {
      const embedding = { state: "done", chunksEmbedded: 1, chunks: 1, notesPending: 0, model: null, rate: 0, problem: null };
      send(200, (this.options.vaults ?? [{ vaultId: "notes", name: "Notes" }]).map((v) => ({ ...v, embedding })));
    } else if (req.url?.startsWith("/conversations")) {
      send(404, { success: false, error: { code: "not_found", message: "no such route" } });
    } else {
      send(404, { success: false, error: { code: "not_found", message: "no such route" } });
    }
  }

  private onSocket(ws: WebSocket): void {
    let authenticated = false;
    ws.on("message", (data) => {
      const frame = JSON.parse(String(data)) as { id: string; commandName: string; arguments: Record<string, unknown> };
      const reply = (success: boolean, result: unknown, error: { code: string; message: string } | null = null) =>
        ws.send(JSON.stringify({ type: "reply", id: frame.id, commandName: frame.commandName, success, result, error }));
      if (!authenticated) {
        if (frame.commandName === "Authenticate" && frame.arguments["key"] === this.key) {
          authenticated = true;
          this.sockets.add(ws);
          reply(true, { authenticated: true });
          const vaults = (this.options.vaults ?? [{ vaultId: "notes" }]).map((v) => v.vaultId);
          const hello: Record<string, unknown> = { type: "hello", server: "vaultpilot", version: "0.1.0", vaults, role: "ui" };
          if (this.options.commands) hello["commands"] = this.options.commands;
          if (this.serverId !== undefined) hello["server_id"] = this.serverId;
          ws.send(JSON.stringify(hello));
          if (this.options.replay) for (const frame of this.backlog) ws.send(frame);
        } else {
          reply(false, null, { code: "unauthorized", message: "Wrong API key." });
          ws.close(4401, "unauthorized");
        }
        return;
      }
      this.received.push({ commandName: frame.commandName, arguments: frame.arguments });
      if (frame.commandName === "StartAgent") reply(true, { runId: `run${this.received.length}` });
      else if (frame.commandName === "UndoRun") reply(true, { undone: [] });
      else reply(true, { results: [] });
    });
    ws.on("close", () => this.sockets.delete(ws));
  }
}

/** What the plugin's socketFactory is set to in tests: `ws`'s client, a real socket. */
export function nodeSocket(url: string) {
  return new WebSocket(url);
}

/** A port nothing listens on (yet). */
export async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}
