"""The approval question MCP asks (elicitation) over stdio, for a change that takes a file
that is not a note with it: the file reads "binary, deleted", never "+0 −0" (which reads as
"nothing changes"). Real server process, real vault, the SDK's client."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.client.client import Client
from mcp.client.session import ClientRequestContext
from mcp.client.stdio import StdioServerParameters

from .conftest import TIMEOUT


def test_a_binary_file_in_the_question_says_what_happens_to_it(
    one_vault: StdioServerParameters, example_vault: Path
) -> None:
    folder = example_vault / "Garden Plans"
    folder.mkdir()
    (folder / "Beds.md").write_text("# Beds\none\n", encoding="utf-8")
    (folder / "beds.png").write_bytes(b"\x89PNG\r\n\x1a\n not text")
    asked: list[str] = []

    async def elicit(
        context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        asked.append(params.message)
        return types.ElicitResult(action="decline", content={"approve": False})

    async def session() -> None:
        async with Client(one_vault, elicitation_callback=elicit) as client:
            call: dict[str, Any] = {
                "operation": "delete_folder",
                "target": "Garden Plans",
                "confirmDestructive": True,
                "recursive": True,
            }
            declined = await client.call_tool("obsidian_vault_manager", call)
            assert declined.is_error

    async def bounded() -> None:
        with anyio.fail_after(TIMEOUT):
            await session()

    anyio.run(bounded)
    assert len(asked) == 1 and folder.is_dir()
    question = asked[0]
    assert "Garden Plans/beds.png deleted (binary, deleted)" not in question
    assert "Garden Plans/beds.png (binary, deleted)" in question, question
    assert "Garden Plans/Beds.md deleted (+0 −2)" in question, question
    assert "beds.png deleted (+0 −0)" not in question
