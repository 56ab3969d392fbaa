/** The web page: the agent view over the server's WebSocket, on the page's own origin. */

import { render } from "preact";
import { AgentView } from "./components/AgentView";
import { connectWebSocket } from "./wsConnection";
import "./styles.css";

const url = new URL("ws", window.location.href);
url.protocol = window.location.protocol === "https:" ? "wss:" : "ws:";
const root = document.getElementById("app");
if (root !== null) {
  root.textContent = "";
  render(<AgentView connection={connectWebSocket(url.toString())} />, root);
}
