/**
 * The left column (a drawer at narrow width): "Sign out" (when the host can), vault switcher with semantic-search coverage,
 * "New conversation", past conversations, and a search over the vault that needs no model (the
 * semantic_search tool over the same connection; a result opens a read-only preview of the note).
 */

import type { ComponentChild } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import type { Connection } from "../connection";
import { renderMarkdown } from "../markdown";
import type { ConversationSummary, EmbeddingInfo, VaultInfo } from "../wire";
import { isObject } from "../wire";

interface Props {
  connection: Connection;
  vaults: VaultInfo[];
  vault: string | null;
  onVault(id: string): void;
  onNew(): void;
  /** undefined while they load; null when the server does not keep conversations. */
  conversations: ConversationSummary[] | null | undefined;
  current: string | null;
  onContinue(id: string): void;
  /** Shown as "Sign out" when the host can sign out (the web page, not the Obsidian plugin). */
  onSignOut?: (() => void) | undefined;
  /** At narrow width the sidebar is a drawer: its id (the top bar's button controls it) and whether it is open. */
  id?: string | undefined;
  open?: boolean;
}

export function Sidebar(props: Props) {
  const info = props.vaults.find((v) => v.vaultId === props.vault);
  return (
    <nav id={props.id} class={props.open ? "sidebar open" : "sidebar"} aria-label="Vault" tabIndex={-1}>
      {props.onSignOut && (
        <div class="sidebar-head">
          <button type="button" onClick={props.onSignOut}>Sign out</button>
        </div>
      )}
      <label class="field">
        <span>Vault</span>
        <select value={props.vault ?? ""} onChange={(e) => props.onVault((e.currentTarget as HTMLSelectElement).value)}>
          {props.vaults.map((v) => (
            <option key={v.vaultId} value={v.vaultId}>{v.name}</option>
          ))}
        </select>
      </label>
      {info && <Coverage info={info.embedding} />}
      <button type="button" class="new" onClick={props.onNew}>New conversation</button>
      <section aria-labelledby="past-title">
        <h2 id="past-title">Past conversations</h2>
        {props.conversations === undefined ? (
          <p class="muted">Loading…</p>
        ) : props.conversations === null ? (
          <p class="muted">This server does not keep past conversations.</p>
        ) : props.conversations.length === 0 ? (
          <p class="muted">None yet.</p>
        ) : (
          <ul class="conversations">
            {props.conversations.map((c) => (
              <li key={c.id}>
                <button type="button" aria-current={c.id === props.current} onClick={() => props.onContinue(c.id)}>
                  {c.running && <span class="dot" aria-label="running" />}
                  <span class="title">{c.title}</span> <span class="muted">{relative(c.updated)}</span>
                </button>
              </li>
            ))}
          </ul>
        )}
      </section>
      {props.vault !== null && <VaultSearch connection={props.connection} vault={props.vault} name={info?.name ?? props.vault} />}
    </nav>
  );
}

export function Coverage({ info }: { info: EmbeddingInfo }) {
  if (info.state === "unknown") return null;
  const pending = info.notesPending > 0 ? `, ${info.notesPending.toLocaleString("en-US")} notes pending` : "";
  const working = info.state === "embedding" ? ", embedding…" : "";
  if (info.chunks === 0) {
    // Nothing embedded yet: say so instead of "100% of 0".
    return (
      <div class="coverage" aria-label="Embedding coverage">
        <span>
          {info.notesPending > 0
            ? `Semantic search: not embedded yet${pending}${working}; search ranks by keywords meanwhile`
            : "Semantic search: nothing to embed yet"}
        </span>
        <Problem info={info} />
      </div>
    );
  }
  const pct = Math.floor((100 * info.chunksEmbedded) / info.chunks);
  return (
    <div class="coverage" aria-label="Embedding coverage">
      <progress max={100} value={pct} aria-hidden="true" />
      <span>
        Semantic search covers {pct}% ({info.chunksEmbedded.toLocaleString("en-US")} of {info.chunks.toLocaleString("en-US")} sections)
        {working}
        {pending}
      </span>
      <Problem info={info} />
    </div>
  );
}

/** Why coverage is not moving. Another process embedding ("busy") is how things should be, not
 * a fault: said in muted words, naming the program the server reports as the lock's holder. */
function Problem({ info }: { info: EmbeddingInfo }) {
  if (!info.problem) return null;
  if (info.state !== "busy") return <span class="warn">{info.problem}</span>;
  return <span class="muted embed-busy">{busyLine(info.problem)}</span>;
}

/** "another process is embedding (pid 12, vaultpilot index)" → "`vaultpilot index` (pid 12) is
 * embedding; this server follows". Any other wording is shown as the server gave it. */
function busyLine(problem: string): ComponentChild {
  const named = /^another process is embedding \((pid \d+), (.+)\)$/.exec(problem);
  if (named) return <><code>{named[2]}</code> ({named[1]}) is embedding; this server follows</>;
  if (/^another process is embedding\b/.test(problem)) return "Another process is embedding; this server follows";
  return problem;
}

interface Hit {
  path: string;
  title: string;
  excerpt: string;
  relevance: number;
}

function VaultSearch({ connection, vault, name }: { connection: Connection; vault: string; name: string }) {
  const [query, setQuery] = useState("");
  const [hits, setHits] = useState<Hit[]>([]);
  const [message, setMessage] = useState("");
  const [preview, setPreview] = useState<null | { path: string; text: string }>(null);
  // A hit whose note was moved or deleted since the search: said here, and the search run again
  // (``rerun``) without the paths known to be gone, until the words change.
  const [notice, setNotice] = useState("");
  const [rerun, setRerun] = useState(0);
  const gone = useRef<Set<string>>(new Set());
  const input = useRef<HTMLInputElement>(null);
  const ticket = useRef(0);
  const opener = useRef<HTMLElement | null>(null);
  const close = useRef<HTMLButtonElement>(null);
  const shut = () => {
    setPreview(null);
    opener.current?.focus();
  };

  useEffect(() => {
    if (preview === null) return;
    close.current?.focus();
    const onKey = (e: KeyboardEvent) => {
      if (e.key === "Escape") {
        e.preventDefault();
        shut();
      }
    };
    document.addEventListener("keydown", onKey);
    return () => document.removeEventListener("keydown", onKey);
  }, [preview]);

  useEffect(() => {
    gone.current = new Set();
    setNotice("");
  }, [query, vault]);

  useEffect(() => {
    const q = query.trim();
    if (!q) {
      setHits([]);
      setMessage("");
      return;
    }
    const mine = ++ticket.current;
    const t = window.setTimeout(async () => {
      const reply = await connection.send("obsidian_query_vault", { queryType: "semantic_search", query: q, limit: 10, VaultID: vault });
      if (mine !== ticket.current) return;
      const result = isObject(reply.result) ? reply.result : {};
      const rows = Array.isArray(result["results"]) ? result["results"] : [];
      setHits(rows.filter(isObject).map((r) => ({
        path: String(r["path"] ?? ""), title: String(r["title"] ?? r["path"] ?? ""),
        excerpt: String(r["excerpt"] ?? ""), relevance: Number(r["relevance"] ?? 0),
      })).filter((hit) => !gone.current.has(hit.path)));
      // The tool's own hint is for the model (filters it can pass); a person refines the words.
      const total = typeof result["totalFound"] === "number" ? result["totalFound"] : rows.length;
      const more = total > rows.length ? `Showing ${rows.length} of ${total}: refine the words to narrow it.` : "";
      setMessage(reply.error?.message ?? (rows.length === 0 ? "No notes found." : more));
    }, 200);
    return () => window.clearTimeout(t);
  }, [query, vault, rerun]);

  const open = async (hit: Hit, from: HTMLElement) => {
    opener.current = from;
    const reply = await connection.send("obsidian_get_context", { contextType: "read_note", target: hit.path, responseFormat: "detailed", VaultID: vault });
    if (reply.error?.code === "not_found") {
      // The tool's message is advice for the model (which tool to call next); a person needs to
      // know the list is out of date. The hit goes, and the search runs again (a moved note
      // comes back under its new path).
      gone.current.add(hit.path);
      setHits((list) => list.filter((h) => h.path !== hit.path));
      setNotice(`“${hit.title}” was moved or deleted since the search; searching again.`);
      setRerun((n) => n + 1);
      input.current?.focus();
      return;
    }
    const result = isObject(reply.result) ? reply.result : {};
    const note = isObject(result["primaryNote"]) ? result["primaryNote"] : {};
    setPreview({ path: hit.path, text: typeof note["content"] === "string" ? note["content"] : reply.error?.message ?? "This note could not be read." });
  };

  return (
    <section class="search" aria-labelledby="search-title">
      <h2 id="search-title">Search the vault</h2>
      <input ref={input} type="search" aria-label="Search the vault" placeholder="Works without a model" value={query} onInput={(e) => setQuery((e.currentTarget as HTMLInputElement).value)} />
      <p class="search-notice" role="status">{notice}</p>
      {message && <p class="muted">{message}</p>}
      <ul class="hits">
        {hits.map((hit) => (
          <li key={hit.path}>
            <button type="button" onClick={(e) => void open(hit, e.currentTarget as HTMLElement)}>
              <span class="title">{hit.title}</span>{" "}
              <span class="hit-row">
                <span class="path">{hit.path}</span>{" "}
                <span class="relevance" title="How well the note matches the words (100% is the best)">
                  <meter min={0} max={1} value={hit.relevance} aria-hidden="true" /> {Math.round(hit.relevance * 100)}%
                  <span class="sr"> relevance</span>
                </span>
              </span>
              <span class="excerpt">{hit.excerpt.replace(/\*\*/g, "")}</span>
            </button>
          </li>
        ))}
      </ul>
      {preview && (
        // Over the page where the person looks, not below the results; Escape or a click outside closes it.
        <div class="preview-backdrop" onClick={(e) => { if (e.target === e.currentTarget) shut(); }}>
          <div class="preview" role="dialog" aria-modal="true" aria-label={`Preview of ${preview.path}`}>
            <div class="preview-head">
              <code>{preview.path}</code>
              <button type="button" ref={close} onClick={shut}>Close <kbd aria-hidden="true">Esc</kbd></button>
            </div>
            {renderMarkdown(preview.text, name)}
          </div>
        </div>
      )}
    </section>
  );
}

function relative(ms: number): string {
  const s = Math.round((Date.now() - ms) / 1000);
  if (s < 60) return "just now";
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return `${Math.floor(s / 86400)} d ago`;
}
