"""``python -m vaultpilot.index.embedding build [--dest DIR] [--force]`` and ``check``.

``build`` derives the offline model (see ``build``); ``check`` loads it and embeds two sentences.
Exit status 0 on success, 2 with a one-line message when something is missing.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from vaultpilot.index.embedding.base import EmbeddingModelMissing, default_model_dir
from vaultpilot.index.embedding.build import build_model
from vaultpilot.index.embedding.local import load_default_embedder

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m vaultpilot.index.embedding")
    commands = parser.add_subparsers(dest="command", required=True)
    build = commands.add_parser("build", help="derive the offline embedding model")
    build.add_argument("--dest", type=Path, default=None, help=f"default: {default_model_dir()}")
    build.add_argument("--force", action="store_true", help="rebuild even if up to date")
    check = commands.add_parser("check", help="load the model and embed two sentences")
    check.add_argument("--dest", type=Path, default=None, help=f"default: {default_model_dir()}")
    args = parser.parse_args(argv)

    started = time.perf_counter()
    try:
        if args.command == "build":
            path = build_model(args.dest, force=args.force)
            print(f"embedding model ready in {path} ({time.perf_counter() - started:.1f} s)")
        else:
            embedder = load_default_embedder(args.dest)
            vectors = embedder.embed(["A cat sits on the mat.", "A kitten rests on a rug."])
            similarity = float(vectors[0] @ vectors[1])
            print(f"{embedder.model_name}: dimension {embedder.dimension}, ok ({similarity:.2f})")
    except EmbeddingModelMissing as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
