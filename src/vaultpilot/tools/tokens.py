"""A cheap token estimate: about four characters of JSON per token.

Good enough to tell the model how much a result costs and to keep concise results near 50
tokens and detailed ones near 200; it is not a tokenizer.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["estimate_tokens"]


def estimate_tokens(value: Any) -> int:
    """Approximate tokens in ``value`` as it goes over the wire (a string, or JSON)."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return (len(text) + 3) // 4
