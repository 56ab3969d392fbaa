"""The key file (made with secrets, mode 0600, rotated atomically) and where settings come from."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from vaultpilot.errors import SetupError
from vaultpilot.server.keyfile import KeyStore, ensure_key, keys_match, read_key, rotate_key
from vaultpilot.server.settings import DEFAULT_PORT, is_loopback, load_settings


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_key_is_made_once_with_mode_0600(tmp_path: Path) -> None:
    path = tmp_path / "data" / "server.key"
    key, created = ensure_key(path)
    assert created and len(key) >= 43 and mode(path) == 0o600
    again, created_again = ensure_key(path)
    assert again == key and not created_again
    assert [p.name for p in path.parent.iterdir()] == ["server.key"]  # no temporary left


def test_rotation_replaces_the_key_and_a_store_follows_it(tmp_path: Path) -> None:
    path = tmp_path / "server.key"
    key, _ = ensure_key(path)
    store = KeyStore(path, key)
    assert store.check(key)
    new = rotate_key(path)
    assert new != key and mode(path) == 0o600
    assert store.check(new) and not store.check(key)


def test_an_open_key_file_is_tightened_and_a_bad_one_refused(tmp_path: Path) -> None:
    path = tmp_path / "server.key"
    key, _ = ensure_key(path)
    path.chmod(0o644)
    assert read_key(path) == key and mode(path) == 0o600
    path.write_text("short\n")
    with pytest.raises(SetupError, match="key rotate"):
        read_key(path)
    with pytest.raises(SetupError, match="No API key"):
        read_key(tmp_path / "missing.key")


def test_keys_compare_exactly() -> None:
    assert keys_match("abc", "abc")
    assert (
        not keys_match("abd", "abc") and not keys_match(None, "abc") and not keys_match("", "abc")
    )


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {"VAULTPILOT_CONFIG": str(tmp_path / "none.toml")}


def test_defaults_and_precedence(example_vault: Path, tmp_path: Path, env: dict[str, str]) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        f'model = "x"\n[server]\nport = 35000\nallowed_origins = ["app://obsidian.md"]\n'
        "background_embedding = false\n"
        f'[server.vaults]\nnotes = "{example_vault}"\n[server.shell]\nenabled = true\n'
        'allowlist = ["git status"]\n'
    )
    base = load_settings(vaults=[str(example_vault)], data_dir=tmp_path, env=env)
    assert (base.host, base.port, base.allow_remote) == ("127.0.0.1", DEFAULT_PORT, False)
    assert base.vaults == {"vault": example_vault.resolve()} and not base.shell.enabled
    assert base.background_embedding
    from_file = load_settings(config=config, data_dir=tmp_path, env=env)
    assert from_file.port == 35000 and from_file.vaults == {"notes": example_vault.resolve()}
    assert from_file.shell.enabled and from_file.shell.allowlist == ("git status",)
    assert from_file.allowed_origins == ("app://obsidian.md",)
    assert not from_file.background_embedding
    forced = load_settings(config=config, background_embedding=True, data_dir=tmp_path, env=env)
    assert forced.background_embedding
    from_env = load_settings(
        config=config, data_dir=tmp_path, env={**env, "VAULTPILOT_PORT": "35001"}
    )
    assert from_env.port == 35001
    from_flag = load_settings(
        config=config, port=35002, data_dir=tmp_path, env={"VAULTPILOT_PORT": "35001"}
    )
    assert from_flag.port == 35002
    named = load_settings(
        vaults=[f"a={example_vault}", f"b={example_vault}"], data_dir=tmp_path, env=env
    )
    assert list(named.vaults) == ["a", "b"]


def test_a_remote_address_needs_allow_remote(
    example_vault: Path, tmp_path: Path, env: dict[str, str]
) -> None:
    with pytest.raises(SetupError, match="--allow-remote"):
        load_settings(vaults=[str(example_vault)], host="0.0.0.0", data_dir=tmp_path, env=env)
    remote = load_settings(
        vaults=[str(example_vault)], host="0.0.0.0", allow_remote=True, data_dir=tmp_path, env=env
    )
    assert remote.allow_remote
    assert is_loopback("127.0.0.2") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.2")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"vaults": ["/no/such/folder"]}, "does not exist"),
        ({}, "No vault to serve"),
        ({"vaults": ["x"], "config": "/no/config.toml"}, "does not exist"),
    ],
)
def test_setup_errors_say_what_to_do(
    tmp_path: Path, env: dict[str, str], kwargs: dict[str, object], message: str
) -> None:
    with pytest.raises(SetupError, match=message):
        load_settings(data_dir=tmp_path, env=env, **kwargs)  # type: ignore[arg-type]


def test_bad_config_values_are_named(
    example_vault: Path, tmp_path: Path, env: dict[str, str]
) -> None:
    config = tmp_path / "c.toml"
    config.write_text("[server]\nport = 'high'\n")
    with pytest.raises(SetupError, match="'port'"):
        load_settings(vaults=[str(example_vault)], config=config, data_dir=tmp_path, env=env)
    config.write_text("[server.shell]\nenable = true\n")
    with pytest.raises(SetupError, match=r"'shell\.enable'"):
        load_settings(vaults=[str(example_vault)], config=config, data_dir=tmp_path, env=env)
    config.write_text("[server\n")
    with pytest.raises(SetupError, match="not valid TOML"):
        load_settings(vaults=[str(example_vault)], config=config, data_dir=tmp_path, env=env)
    with pytest.raises(SetupError, match="not a port"):
        load_settings(
            vaults=[str(example_vault)], data_dir=tmp_path, env={**env, "VAULTPILOT_PORT": "x"}
        )
