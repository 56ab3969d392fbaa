/**
 * What the plugin asks the server over HTTP, and the messages a person reads when it fails.
 *
 * `getVaults` calls `GET /vaults` with the key as a Bearer token and sorts every outcome into
 * one of: ok, down (nothing listens), unauthorized (missing or wrong key), refused (another
 * refusal, with the server's own message) and bad (an answer we cannot read). `matchVault`
 * finds which served vault is this Obsidian vault: by its folder path when the server gives
 * one, else by its folder name (the server names a vault after its folder, as Obsidian does).
 * The HTTP call itself is passed in (`HttpGet`: Obsidian's `requestUrl` in the app), so this
 * module stays free of the app and of the browser's CORS rules.
 */

import type { VaultInfo } from "../../web/src/wire";
import { serveCommand } from "./settings";

/** One GET; resolves with the status and the parsed body, rejects when nothing answers. */
export type HttpGet = (url: string, headers: Record<string, string>) => Promise<{ status: number; json: unknown }>;

/** A served vault; `path` is given by servers that publish it. */
export type ServedVault = VaultInfo & { path?: string };

export type VaultsAnswer =
  | { kind: "ok"; vaults: ServedVault[] }
  | { kind: "down" | "unauthorized" | "refused" | "bad"; message: string };

export const OBSIDIAN_ORIGIN = "app://obsidian.md";

/** Where the key is, for every message that asks for it. */
export const KEY_HELP =
  "The key is in the file server.key in vaultpilot's data folder: `vaultpilot serve` prints that file's path " +
  "(\"key file\"), and `vaultpilot serve --show-key` prints the key itself.";

export function downMessage(base: string, vaultPath: string): string {
  return `No vaultpilot server answers at ${base}. Start it for this vault: ${serveCommand(vaultPath)}`;
}

export function keyMessage(hasKey: boolean): string {
  return hasKey
    ? `The server refused this API key (it changes with \`vaultpilot key rotate\`). ${KEY_HELP}`
    : `Paste the server's API key in the plugin's settings. ${KEY_HELP}`;
}

export function originMessage(base: string): string {
  return (
    `The server at ${base} answers but refuses Obsidian's connection (origin ${OBSIDIAN_ORIGIN}). ` +
    `Add allowed_origins = ["${OBSIDIAN_ORIGIN}"] under [server] in vaultpilot's config file ` +
    "(`vaultpilot config` shows where it is), then restart the server."
  );
}

export async function getVaults(get: HttpGet, base: string, key: string, vaultPath: string): Promise<VaultsAnswer> {
  let answer: { status: number; json: unknown };
  try {
    answer = await get(`${base}/vaults`, { Accept: "application/json", Authorization: `Bearer ${key}` });
  } catch {
    return { kind: "down", message: downMessage(base, vaultPath) };
  }
  if (answer.status === 401) return { kind: "unauthorized", message: keyMessage(key !== "") };
  if (answer.status !== 200) {
    return { kind: "refused", message: `The server at ${base} refused: ${serverMessage(answer.json) ?? `HTTP ${answer.status}`}` };
  }
  if (!Array.isArray(answer.json)) {
    return { kind: "bad", message: `${base} answered GET /vaults with something other than a vault list: is it a vaultpilot server?` };
  }
  const vaults = answer.json.filter(
    (v): v is ServedVault => typeof v === "object" && v !== null && typeof (v as { vaultId?: unknown }).vaultId === "string",
  );
  return { kind: "ok", vaults };
}

function serverMessage(body: unknown): string | null {
  if (typeof body !== "object" || body === null) return null;
  const error = (body as { error?: unknown }).error;
  if (typeof error === "object" && error !== null && typeof (error as { message?: unknown }).message === "string") {
    return (error as { message: string }).message;
  }
  return null;
}

/** The VaultID of the served vault that is the folder at `vaultPath`, or null. */
export function matchVault(vaults: ServedVault[], vaultPath: string): string | null {
  const mine = normalPath(vaultPath);
  const byPath = vaults.find((v) => typeof v.path === "string" && normalPath(v.path) === mine);
  if (byPath) return byPath.vaultId;
  const folder = mine.split("/").pop() ?? "";
  const byName = vaults.filter((v) => v.name === folder || v.vaultId === folder);
  // Two served vaults with this folder name: only the path could tell them apart.
  return byName.length === 1 ? (byName[0]?.vaultId ?? null) : null;
}

function normalPath(path: string): string {
  const slashed = path.replace(/\\/g, "/").replace(/\/+$/, "");
  // Windows drive letters and folder names compare without case.
  return /^[a-z]:\//i.test(slashed) ? slashed.toLowerCase() : slashed;
}

export function notServedMessage(base: string, vaults: ServedVault[], vaultPath: string): string {
  const served = vaults.length ? vaults.map((v) => `"${v.vaultId}"`).join(", ") : "no vault";
  return (
    `The server at ${base} serves ${served} but not this vault (${vaultPath}). ` +
    `Start a server for it: ${serveCommand(vaultPath)}, or add it under [server.vaults] in the config file.`
  );
}
