/**
 * The plugin's settings as stored in its data (`data.json` in the plugin's folder), and the
 * addresses and commands derived from them. Pure: nothing here touches Obsidian or the network.
 *
 * `readSettings(raw)` accepts whatever `loadData()` returns (nothing, an older shape, a value
 * edited by hand) and keeps only well-typed fields, so a bad file never breaks the plugin.
 */

export interface VaultpilotSettings {
  /** host:port of `vaultpilot serve` (an http:// address is accepted too). */
  address: string;
  /** The server's API key (shown masked in the settings tab). */
  apiKey: string;
  /** The server's VaultID for this Obsidian vault; empty until detected or typed. */
  vaultId: string;
  /** Open the notes a run changed that are not open yet (open ones always refresh). */
  openChanged: boolean;
}

export const DEFAULT_ADDRESS = "127.0.0.1:34700";

export const DEFAULT_SETTINGS: VaultpilotSettings = {
  address: DEFAULT_ADDRESS,
  apiKey: "",
  vaultId: "",
  openChanged: true,
};

export function readSettings(raw: unknown): VaultpilotSettings {
  const data = typeof raw === "object" && raw !== null ? (raw as Record<string, unknown>) : {};
  const text = (name: keyof VaultpilotSettings, fallback: string): string => {
    const value = data[name];
    return typeof value === "string" ? value.trim() : fallback;
  };
  return {
    address: text("address", DEFAULT_ADDRESS) || DEFAULT_ADDRESS,
    apiKey: text("apiKey", ""),
    vaultId: text("vaultId", ""),
    openChanged: typeof data["openChanged"] === "boolean" ? data["openChanged"] : true,
  };
}

/** The server's http origin for an address, or an error message saying what to type instead. */
export function httpBase(address: string): { base: string } | { error: string } {
  const raw = address.trim() || DEFAULT_ADDRESS;
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(raw) ? raw : `http://${raw}`;
  let url: URL;
  try {
    url = new URL(withScheme);
  } catch {
    return { error: `"${address}" is not a server address: type host:port, e.g. ${DEFAULT_ADDRESS}.` };
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    return { error: `"${address}" is not an http address: type host:port, e.g. ${DEFAULT_ADDRESS}.` };
  }
  if (url.pathname !== "/" || url.search || url.hash || url.username) {
    return { error: `"${address}" has more than a host and port: type host:port, e.g. ${DEFAULT_ADDRESS}.` };
  }
  return { base: `${url.protocol}//${url.host}` };
}

/** The WebSocket address for an http origin. */
export function wsUrl(base: string): string {
  return `${base.replace(/^http/, "ws")}/ws`;
}

/**
 * The command that starts a server for this vault. Inside the double quotes a POSIX shell
 * expands `$`, `` ` `` and `"`, so those are escaped; backslashes stay (Windows paths need them).
 */
export function serveCommand(vaultPath: string): string {
  return `vaultpilot serve --vault "${vaultPath.replace(/(["$`])/g, "\\$1")}"`;
}
