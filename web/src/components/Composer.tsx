/**
 * The message box: Enter sends, Shift+Enter starts a new line; `@` and `[[` open note
 * completion (arrow keys move, Enter or Tab picks, Esc closes). A note picked after `@` is
 * attached (a chip; sent as an `@"path"` mention the agent reads), one picked after `[[`
 * becomes a link in the text. While a run goes, Stop replaces Send (Esc also stops), beside
 * Pause (the run halts at its next step) or Resume when it is paused.
 */

import { useEffect, useRef, useState } from "preact/hooks";

/** Text and notes a host puts in the message box; a new `id` applies it once. */
export interface Draft {
  id: number;
  text: string;
  attach: string[];
}

export interface Suggestion {
  path: string;
  title: string;
}

interface Props {
  running: boolean;
  disabled: boolean;
  suggest(query: string): Promise<Suggestion[]>;
  onSend(text: string, attached: string[]): void;
  onStop(): void;
  /** Offered while a run goes: null when the server cannot pause runs. */
  paused?: boolean | null;
  /** A pause was asked for and waits for the run's next step: Resume then cancels it. */
  pausing?: boolean;
  onPause?(): void;
  onResume?(): void;
  draft?: Draft | null;
  /** Changes when what had the keyboard may have gone (an approval answered, a run ended):
   * the message box takes the focus then, unless something else has it. */
  focusKey?: string;
}

const AT = /(^|[\s(\[{])@([^\s@"'[\]]*)$/;
const WIKI = /\[\[([^\]\n|#]*)$/;

export function Composer(props: Props) {
  const [text, setText] = useState("");
  const [chips, setChips] = useState<string[]>([]);
  const [options, setOptions] = useState<Suggestion[]>([]);
  const [active, setActive] = useState(0);
  const [trigger, setTrigger] = useState<null | { kind: "@" | "[["; start: number; query: string }>(null);
  const box = useRef<HTMLTextAreaElement>(null);
  const asked = useRef(0);

  useEffect(() => {
    // On load, and when the focused control went away with what it answered, typing goes to
    // the message box (not to the page's first button).
    const el = document.activeElement;
    if (el === null || el === document.body) box.current?.focus({ preventScroll: true });
  }, [props.focusKey]);

  useEffect(() => {
    const draft = props.draft;
    if (!draft) return;
    setChips((c) => [...c, ...draft.attach.filter((p, i) => p && !c.includes(p) && draft.attach.indexOf(p) === i)]);
    if (draft.text) setText((t) => (t.trim() ? `${t.replace(/\s+$/, "")}\n${draft.text}` : draft.text));
    box.current?.focus();
  }, [props.draft?.id]);

  useEffect(() => {
    if (trigger === null) {
      setOptions([]);
      return;
    }
    const ticket = ++asked.current;
    const t = window.setTimeout(() => {
      void props.suggest(trigger.query).then((found) => {
        if (ticket === asked.current) {
          setOptions(found.slice(0, 8));
          setActive(0);
        }
      });
    }, 120);
    return () => window.clearTimeout(t);
  }, [trigger?.kind, trigger?.query]);

  const update = (value: string, caret: number) => {
    setText(value);
    const before = value.slice(0, caret);
    const at = AT.exec(before);
    const wiki = WIKI.exec(before);
    if (wiki) setTrigger({ kind: "[[", start: caret - wiki[0].length, query: wiki[1] ?? "" });
    else if (at) setTrigger({ kind: "@", start: caret - (at[2] ?? "").length - 1, query: at[2] ?? "" });
    else setTrigger(null);
  };

  const pick = (s: Suggestion) => {
    if (trigger === null) return;
    const caret = box.current?.selectionStart ?? text.length;
    const head = text.slice(0, trigger.start);
    const tail = text.slice(caret);
    if (trigger.kind === "@") {
      if (!chips.includes(s.path)) setChips([...chips, s.path]);
      setText(head + tail);
    } else {
      setText(`${head}[[${s.path.replace(/\.md$/i, "")}]]${tail}`);
    }
    setTrigger(null);
    box.current?.focus();
  };

  const send = () => {
    const goal = text.trim();
    if (!goal || props.disabled) return;
    props.onSend(goal, chips);
    setText("");
    setChips([]);
    setTrigger(null);
  };

  const onKeyDown = (e: KeyboardEvent) => {
    if (options.length > 0 && trigger !== null) {
      if (e.key === "ArrowDown" || e.key === "ArrowUp") {
        e.preventDefault();
        setActive((active + (e.key === "ArrowDown" ? 1 : options.length - 1)) % options.length);
        return;
      }
      if (e.key === "Enter" || e.key === "Tab") {
        e.preventDefault();
        const s = options[active];
        if (s) pick(s);
        return;
      }
      if (e.key === "Escape") {
        e.preventDefault();
        setTrigger(null);
        return;
      }
    }
    if (e.key === "Escape" && props.running) {
      e.preventDefault();
      props.onStop();
    } else if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      if (!props.running) send();
    }
  };

  const listId = "note-completion";
  return (
    <form class="composer" onSubmit={(e) => { e.preventDefault(); send(); }}>
      {chips.length > 0 && (
        <ul class="chips" aria-label="Attached notes">
          {chips.map((c) => (
            <li class="chip" key={c}>
              {c}
              <button type="button" aria-label={`Remove ${c}`} onClick={() => setChips(chips.filter((x) => x !== c))}>×</button>
            </li>
          ))}
        </ul>
      )}
      {options.length > 0 && trigger !== null && (
        <ul class="completion" id={listId} role="listbox" aria-label="Notes">
          {options.map((o, i) => (
            <li
              key={o.path}
              role="option"
              aria-selected={i === active}
              class={i === active ? "active" : ""}
              onMouseDown={(e) => { e.preventDefault(); pick(o); }}
            >
              <span class="title">{o.title}</span> <span class="path">{o.path}</span>
            </li>
          ))}
        </ul>
      )}
      <div class="composer-row">
        <textarea
          ref={box}
          aria-label="Message"
          placeholder="Ask about your vault or tell the agent what to change. @ attaches a note."
          rows={2}
          value={text}
          aria-autocomplete="list"
          aria-controls={options.length ? listId : undefined}
          onInput={(e) => { const t = e.currentTarget as HTMLTextAreaElement; update(t.value, t.selectionStart); }}
          onKeyDown={onKeyDown}
        />
        {props.running ? (
          <>
            {props.paused === true && props.onResume && (
              <button type="button" onClick={props.onResume}>{props.pausing ? "Don't pause" : "Resume"}</button>
            )}
            {props.paused === false && props.onPause && (
              <button type="button" onClick={props.onPause}>Pause</button>
            )}
            <button type="button" class="danger" onClick={props.onStop}>Stop</button>
          </>
        ) : (
          <button type="submit" class="primary" disabled={props.disabled || !text.trim()}>Send</button>
        )}
      </div>
    </form>
  );
}
