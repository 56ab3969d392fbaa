/**
 * Panels that replace a failing action with what to do: no model configured (the exact settings
 * for Ollama, LM Studio, OpenAI and Anthropic, as vaultpilot.agent.config reads them), and
 * signing in when the server wants a session.
 */

import { useState } from "preact/hooks";

const PROVIDERS: { name: string; note: string; env: string; toml: string }[] = [
  {
    name: "Ollama",
    note: "A local model: run `ollama pull qwen2.5:7b` first (no key needed).",
    env: "export VAULTPILOT_BASE_URL=http://localhost:11434/v1\nexport VAULTPILOT_MODEL=qwen2.5:7b",
    toml: 'model = "qwen2.5:7b"\nbase_url = "http://localhost:11434/v1"',
  },
  {
    name: "LM Studio",
    note: "A local model: load one and start the server in LM Studio's Developer tab; use the model's identifier.",
    env: "export VAULTPILOT_BASE_URL=http://localhost:1234/v1\nexport VAULTPILOT_MODEL=qwen2.5-7b-instruct",
    toml: 'model = "qwen2.5-7b-instruct"\nbase_url = "http://localhost:1234/v1"',
  },
  {
    name: "OpenAI",
    note: "Keep the key in the environment, not in the file.",
    env: "export OPENAI_API_KEY=sk-...\nexport VAULTPILOT_MODEL=gpt-4o-mini",
    toml: 'model = "gpt-4o-mini"',
  },
  {
    name: "Anthropic",
    note: "Needs the extra: `pip install 'vaultpilot[anthropic]'`.",
    env: "export VAULTPILOT_PROVIDER=anthropic\nexport ANTHROPIC_API_KEY=sk-ant-...\nexport VAULTPILOT_MODEL=claude-3-5-haiku-latest",
    toml: 'provider = "anthropic"\nmodel = "claude-3-5-haiku-latest"',
  },
];

/** Text with `code` spans: the backticked parts as code, the rest as text. */
function withCode(text: string) {
  return text.split(/`([^`]+)`/).map((part, i) => (i % 2 === 1 ? <code key={i}>{part}</code> : part));
}

export function NoModelPanel(props: { detail: string; configPath: string | null; onCheckAgain(): void }) {
  return (
    <section class="panel no-model" aria-labelledby="no-model-title">
      <h2 id="no-model-title">No model is configured</h2>
      <p>
        The agent needs a chat model. Choose one below, set it in the environment of{" "}
        <code>vaultpilot serve</code> or in its config file
        {props.configPath ? (
          <>
            {" "}
            <code class="config-path">{props.configPath}</code>
          </>
        ) : (
          <>
            , <code>config.toml</code> (<code>vaultpilot config</code> shows where it is)
          </>
        )}
        , then restart the server. Search keeps working without a model.
      </p>
      {props.detail && <pre class="server-says">{props.detail}</pre>}
      <div class="providers">
        {PROVIDERS.map((p) => (
          <section class="provider" key={p.name} aria-label={p.name}>
            <h3>{p.name}</h3>
            <p>{withCode(p.note)}</p>
            <pre>{p.env}</pre>
            <p class="or">or in the config file:</p>
            <pre>{p.toml}</pre>
          </section>
        ))}
      </div>
      <button type="button" onClick={props.onCheckAgain}>Check again</button>{" "}
      <span class="muted">after restarting the server</span>
    </section>
  );
}

export function SignInPanel(props: { detail: string; keyKept?: string; onSignIn(key: string): void }) {
  const [key, setKey] = useState("");
  return (
    <section class="panel signin" aria-labelledby="signin-title">
      <h2 id="signin-title">Sign in to this vaultpilot server</h2>
      <p>
        Open the login link that <code>vaultpilot open</code> prints, or paste the server's API key
        (<code>vaultpilot key show</code> prints it). {props.keyKept ?? "The key is kept in this page only."}
      </p>
      {props.detail && <p class="warn">{props.detail}</p>}
      <form onSubmit={(e) => { e.preventDefault(); if (key.trim()) props.onSignIn(key.trim()); }}>
        {/* A wrapping label, not for/id: the Obsidian plugin may mount several views at once. The
            aria-label repeats the visible text, so the accessible name is what is seen. */}
        <label class="signin-key">
          <span>API key</span>
          <input
            type="password"
            aria-label="API key"
            autocomplete="off"
            placeholder="Paste the API key (vaultpilot key show)"
            value={key}
            onInput={(e) => setKey((e.currentTarget as HTMLInputElement).value)}
          />
        </label>
        <button type="submit" class="primary">Sign in</button>
      </form>
    </section>
  );
}
