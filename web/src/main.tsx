/** The web page: the agent view over the server's WebSocket, on the page's own origin. */

import { render } from "preact";
import { AgentView } from "./components/AgentView";
import { adoptPageSecret } from "./pageSecret";
import { connectWebSocket } from "./wsConnection";
import "./styles.css";

adoptPageSecret(); // before anything reads the address bar or connects
const url = new URL("ws", window.location.href);
url.protocol = window.location.protocol === "https:" ? "wss:" : "ws:";
const root = document.getElementById("app");
if (root !== null) {
  root.textContent = "";
  render(<AgentView connection={connectWebSocket(url.toString())} />, root);
}
