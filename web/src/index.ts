/** What the Obsidian plugin (or any other host) mounts: the view and the connection contract. */

export { AgentView } from "./components/AgentView";
export type { Draft } from "./components/Composer";
export type { Connection, ConnectionState } from "./connection";
export { connectWebSocket } from "./wsConnection";
export { renderMarkdown, obsidianUri } from "./markdown";
export type * from "./wire";
