"""Agent configuration: a TOML file in the user config directory, environment variables, flags.

Each value comes from the first of: a command-line flag, an environment variable, the config file,
the default; ``load_config`` records where each came from (``vaultpilot config`` shows it). The
file is ``<user config dir>/vaultpilot/config.toml`` (``$VAULTPILOT_CONFIG`` names another):

    provider = "openai"                  # or "anthropic" (pip install 'vaultpilot[anthropic]')
    model = "qwen2.5:7b"
    base_url = "http://localhost:11434/v1"
    # api_key = "sk-..."                 # better in the environment
    max_steps = 20
    token_budget = 200000

    [approvals]                          # "allow", "ask" or "deny", per tool or tool.operation
    "obsidian_vault_manager.delete_note" = "deny"

Environment: ``VAULTPILOT_PROVIDER``, ``VAULTPILOT_MODEL``, ``VAULTPILOT_BASE_URL`` (or
``OPENAI_BASE_URL``), ``VAULTPILOT_API_KEY`` (or ``OPENAI_API_KEY`` / ``ANTHROPIC_API_KEY`` for
the provider in use), ``VAULTPILOT_MAX_STEPS``, ``VAULTPILOT_TOKEN_BUDGET``,
``VAULTPILOT_TIMEOUT``, ``VAULTPILOT_MAX_RETRIES``, ``VAULTPILOT_TEMPERATURE``.

A bad file or value raises ``SetupError`` naming the file or variable. ``require_model`` raises
``SetupError`` with ``HOW_TO_CONFIGURE`` when no model is set.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from vaultpilot.agent.approvals import Decision, check_rule_names
from vaultpilot.configfile import CONFIG_ENV, config_path, read_config
from vaultpilot.errors import SetupError

__all__ = [
    "CONFIG_ENV",
    "ENV_VARS",
    "AgentConfig",
    "LoadedConfig",
    "config_path",
    "how_to_configure",
    "load_config",
    "require_model",
]

_LOCAL_HOSTS = ("localhost", "127.0.0.1", "[::1]", "0.0.0.0")  # noqa: S104 (a URL check, not a bind)


class AgentConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    provider: Literal["openai", "anthropic"] = "openai"
    model: str | None = None
    base_url: str | None = None
    api_key: str | None = None
    max_steps: int = Field(20, ge=1, le=500)
    token_budget: int | None = Field(200_000, ge=1)
    timeout: float = Field(120.0, gt=0, description="Seconds to wait for the model server.")
    max_retries: int = Field(2, ge=0, le=10)
    temperature: float | None = Field(None, ge=0, le=2)
    attach_budget: int = Field(6_000, ge=0, description="Tokens of @-attached notes.")
    process_tools: bool = Field(True, description="Offer the process tools of memory.db.")
    instructions: str = Field("", description="Your own instructions, added to the prompt.")
    approvals: dict[str, Decision] = Field(default_factory=dict)

    @field_validator("approvals")
    @classmethod
    def _known_approvals(cls, value: dict[str, Decision]) -> dict[str, Decision]:
        check_rule_names(value)
        return value


# Field -> environment variables, first set wins ({provider} is filled in for api_key/base_url).
ENV_VARS: Mapping[str, tuple[str, ...]] = {
    "provider": ("VAULTPILOT_PROVIDER",),
    "model": ("VAULTPILOT_MODEL",),
    "base_url": ("VAULTPILOT_BASE_URL", "{PROVIDER}_BASE_URL"),
    "api_key": ("VAULTPILOT_API_KEY", "{PROVIDER}_API_KEY"),
    "max_steps": ("VAULTPILOT_MAX_STEPS",),
    "token_budget": ("VAULTPILOT_TOKEN_BUDGET",),
    "timeout": ("VAULTPILOT_TIMEOUT",),
    "max_retries": ("VAULTPILOT_MAX_RETRIES",),
    "temperature": ("VAULTPILOT_TEMPERATURE",),
}


@dataclass(frozen=True, slots=True)
class LoadedConfig:
    config: AgentConfig
    sources: Mapping[str, str]  # field -> "default", "file <path>", "env NAME", "flag --x"
    path: Path

    def shown(self) -> list[tuple[str, str, str]]:
        """``(name, value, source)`` for every field; the API key is masked."""
        rows = []
        for name in AgentConfig.model_fields:
            value: Any = getattr(self.config, name)
            if name == "api_key" and value:
                value = value[:3] + "…" + value[-4:] if len(value) > 10 else "***"
            rows.append(
                (name, "(not set)" if value in (None, "") else str(value), self.sources[name])
            )
        return rows


_OTHER_SECTIONS = frozenset({"server", "rules"})


def _explain(exc: ValidationError, where: str) -> str:
    problems = []
    for e in exc.errors(include_url=False):
        loc = ".".join(str(p) for p in e["loc"])
        if e["type"] == "extra_forbidden":
            problems.append(
                f"unknown setting '{loc}' (known: {', '.join(AgentConfig.model_fields)})"
            )
        else:
            where_ = f"[{loc}]" if loc == "approvals" else f"'{loc}':"
            problems.append(f"{where_} {str(e['msg']).removeprefix('Value error, ')}")
    return f"{where}: " + "; ".join(problems) + "."


def load_config(
    *,
    env: Mapping[str, str] | None = None,
    flags: Mapping[str, Any] | None = None,
    path: Path | None = None,
) -> LoadedConfig:
    """Merge file, environment and ``flags`` (values that are None are ignored). ``path`` is
    the config file when the caller already knows it (``serve --config``), else ``config_path``."""
    env = os.environ if env is None else env
    path = config_path(env) if path is None else path
    values: dict[str, Any] = {}
    sources = dict.fromkeys(AgentConfig.model_fields, "default")
    # The file is shared: tables owned by other parts ([server]) are not agent settings.
    raw = {k: v for k, v in read_config(path).items() if k not in _OTHER_SECTIONS}
    try:
        AgentConfig.model_validate(raw)
    except ValidationError as exc:
        raise SetupError(_explain(exc, f"In the config file {path}")) from None
    for name, value in raw.items():
        values[name] = value
        sources[name] = f"file {path}"
    provider = str(env.get("VAULTPILOT_PROVIDER") or values.get("provider") or "openai")
    for name, names in ENV_VARS.items():
        for var in (n.replace("{PROVIDER}", provider.upper()) for n in names):
            if env.get(var):
                values[name] = env[var]
                sources[name] = f"env {var}"
                break
    for name, value in (flags or {}).items():
        if value is not None:
            values[name] = value
            sources[name] = f"flag --{name.replace('_', '-')}"
    try:
        config = AgentConfig.model_validate(values)
    except ValidationError as exc:
        bad = {str(e["loc"][0]) for e in exc.errors() if e["loc"]}
        where = ", ".join(sorted(sources[b] for b in bad)) or "the settings"
        raise SetupError(_explain(exc, f"A setting is invalid ({where})")) from None
    return LoadedConfig(config, sources, path)


def how_to_configure(path: Path, *, lead: str = "No model is configured. Choose one:") -> str:
    """How to configure a model: the CLI's no-model error and the server's banner list the
    same choices (the agent view's no-model panel shows them as cards)."""
    return (
        f"{lead}\n"
        "  • a local model with Ollama (https://ollama.com): `ollama pull qwen2.5:7b`, then\n"
        "      export VAULTPILOT_BASE_URL=http://localhost:11434/v1 VAULTPILOT_MODEL=qwen2.5:7b\n"
        "    (LM Studio, vLLM and llama.cpp server work the same way with their own URL);\n"
        "  • OpenAI: export OPENAI_API_KEY=sk-... VAULTPILOT_MODEL=gpt-4o-mini\n"
        "  • Anthropic (needs pip install 'vaultpilot[anthropic]'):\n"
        "      export VAULTPILOT_PROVIDER=anthropic ANTHROPIC_API_KEY=sk-ant-...\n"
        "      export VAULTPILOT_MODEL=claude-3-5-haiku-latest\n"
        f"  • or write `provider`, `model` and `base_url` in {path}.\n"
        "`vaultpilot config` shows every setting and where it comes from."
    )


def _is_local(url: str) -> bool:
    host = url.split("://", 1)[-1].split("/", 1)[0].rsplit(":", 1)[0].lower()
    return host in _LOCAL_HOSTS or host.endswith(".local")


def require_model(loaded: LoadedConfig) -> AgentConfig:
    """The config, if it names a model and can reach it; else SetupError saying what to do."""
    cfg = loaded.config
    if not cfg.model:
        raise SetupError(how_to_configure(loaded.path))
    if not cfg.api_key and not (cfg.base_url and _is_local(cfg.base_url)):
        var = "ANTHROPIC_API_KEY" if cfg.provider == "anthropic" else "OPENAI_API_KEY"
        raise SetupError(
            f"The model '{cfg.model}' needs an API key: export {var}=... (or VAULTPILOT_API_KEY), "
            "or point VAULTPILOT_BASE_URL at a local server such as Ollama "
            "(http://localhost:11434/v1)."
        )
    return cfg
