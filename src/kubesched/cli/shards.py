"""The ``--shards N|auto`` and ``--shard-routing`` flags of ``bench`` and ``simulate``.

What they choose is :func:`kubesched.parallel.factory.make_scheduler`'s ``shards`` and
``routing`` (``--shards auto``: :func:`kubesched.parallel.factory.shard_count`).
"""

from __future__ import annotations

import argparse

from kubesched.parallel.factory import ALL, AUTO

SHARDS_HELP = (
    "scheduler shards: 1 is the serial scheduler; N >= 2 runs a dispatcher and a "
    "conflict-checking binder here and N shard processes; auto: N from the cores (at least "
    "2); see --shard-routing and docs/parallel.md"
)
ROUTING_HELP = (
    "with --shards: all (default) sends every Pod to the shards; auto (experimental) routes "
    "each Pod signature to the shards only while its search costs more than the pipeline's "
    "overhead, the coordinator scheduling the rest itself"
)


def _shards_value(text: str) -> int | str:
    if text == AUTO:
        return AUTO
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a number >= 1 or auto, got {text!r}") from None


def add_shards_argument(parser: argparse.ArgumentParser, routing: bool = False) -> None:
    """Add ``--shards N|auto`` (default 1) to an argparse parser, and ``--shard-routing``
    when ``routing``."""
    parser.add_argument(
        "--shards", type=_shards_value, default=1, metavar="N|auto", help=SHARDS_HELP
    )
    if routing:
        parser.add_argument("--shard-routing", choices=(ALL, AUTO), default=ALL, help=ROUTING_HELP)
