/**
 * The page secret: the half of a login-link sign-in that only this page's origin (scheme, host
 * and port) can read. The session cookie alone does not sign in, because browsers send a host's
 * cookies to every port of it; every request signed in by the cookie carries this secret too
 * (an `X-Vaultpilot-Page` header, or a `vaultpilot.page.<secret>` WebSocket subprotocol).
 *
 * After a login link the server redirects to `/#vaultpilot-page=<secret>`. A fragment is never
 * sent to any server; `adoptPageSecret` moves it into localStorage (shared by this origin's tabs,
 * so a second tab and a reload stay signed in; no other origin can read it) and takes it out of
 * the address bar with `history.replaceState`, so it is neither bookmarked nor shown. Where
 * storage is refused (a locked-down browser), the secret lives in this page only.
 */

const FRAGMENT = "vaultpilot-page";
const STORE = "vaultpilot.pageSecret";
const SHAPE = /^[A-Za-z0-9_-]{16,128}$/; // what the server makes: secrets.token_urlsafe

let inPage: string | null = null;

/** Take the secret out of the address bar, if the sign-in just put it there, and keep it. */
export function adoptPageSecret(): void {
  const hash = window.location.hash;
  if (!hash.startsWith(`#${FRAGMENT}=`)) return;
  const secret = hash.slice(FRAGMENT.length + 2);
  window.history.replaceState(window.history.state, "", window.location.pathname + window.location.search);
  if (!SHAPE.test(secret)) return;
  inPage = secret;
  try {
    window.localStorage.setItem(STORE, secret);
  } catch {
    // Storage refused: this page keeps it; another tab signs in with its own link.
  }
}

/** The secret this origin keeps, or null (then only a key signs the page in). */
export function pageSecret(): string | null {
  try {
    // Read each time: a sign-in in another tab replaces both the cookie and this.
    const stored = window.localStorage.getItem(STORE);
    if (stored !== null && SHAPE.test(stored)) return stored;
  } catch {
    // Storage refused: the one this page adopted, if any.
  }
  return inPage;
}

/** Forget the secret (signing out). */
export function forgetPageSecret(): void {
  inPage = null;
  try {
    window.localStorage.removeItem(STORE);
  } catch {
    // Nothing was stored.
  }
}
