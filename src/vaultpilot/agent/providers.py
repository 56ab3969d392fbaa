"""Build the model client a configuration names: OpenAI-compatible, or Anthropic (optional extra).

``make_model(config)`` creates the SDK client (``base_url``, key, timeout, retries) and wraps it.
A local OpenAI-compatible server needs no key; the SDK still wants one, so a placeholder is sent.
A missing ``anthropic`` package is a ``SetupError`` saying how to install it.
"""

from __future__ import annotations

from vaultpilot.agent.config import AgentConfig
from vaultpilot.agent.model import ModelClient
from vaultpilot.errors import SetupError

__all__ = ["make_model"]

_NO_KEY = "not-needed"  # local servers ignore it; the SDK refuses to start without one


def make_model(config: AgentConfig) -> ModelClient:
    if not config.model:
        raise SetupError("No model is configured (see `vaultpilot config`).")
    if config.provider == "anthropic":
        try:
            import anthropic

            from vaultpilot.agent.anthropic_model import AnthropicModel
        except ImportError:
            raise SetupError(
                "The Anthropic provider needs the anthropic package: "
                "pip install 'vaultpilot[anthropic]'."
            ) from None
        anthropic_client = anthropic.AsyncAnthropic(
            api_key=config.api_key or _NO_KEY,
            base_url=config.base_url,
            timeout=config.timeout,
            max_retries=config.max_retries,
        )
        return AnthropicModel(anthropic_client, config.model, temperature=config.temperature)
    import openai

    from vaultpilot.agent.openai_model import OpenAIChatModel

    client = openai.AsyncOpenAI(
        api_key=config.api_key or _NO_KEY,
        base_url=config.base_url,
        timeout=config.timeout,
        max_retries=config.max_retries,
    )
    return OpenAIChatModel(client, config.model, temperature=config.temperature)
