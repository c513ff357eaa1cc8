"""The `--cluster` options of `alternator match` and `alternator tournament`.

Here rather than in `referee.cluster.dask`, which imports pydantic and trio: `alternator --help` stays fast.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

CLUSTER_HELP = """\
Cluster: --cluster tcp://HOST:8786 plays the games on the workers of a Dask scheduler (`dask scheduler`,
then `dask worker tcp://HOST:8786` on each machine; each plays as many games at once as it has threads).
This process keeps the results, standings and resume. The bots must be at the same paths on every worker;
each worker starts every bot before the first game. tcp:// is for a trusted network only: elsewhere use
tls:// with --cluster-ca, --cluster-cert and --cluster-key. Untrusted bots: add --sandbox.
"""


def add_cluster_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "cluster (Dask; needs the cluster extra: pip install 'alternator-arena[cluster]')", description=CLUSTER_HELP
    )
    group.add_argument(
        "--cluster",
        metavar="ADDRESS",
        help="play the games on the workers of this Dask scheduler: tcp://HOST:PORT or tls://HOST:PORT",
    )
    group.add_argument("--cluster-ca", type=Path, metavar="FILE", help="tls://: the CA certificate (PEM)")
    group.add_argument("--cluster-cert", type=Path, metavar="FILE", help="tls://: this client's certificate (PEM)")
    group.add_argument("--cluster-key", type=Path, metavar="FILE", help="tls://: this client's private key (PEM)")
    group.add_argument(
        "--verbose",
        action="store_true",
        help="show Dask's own log as Dask writes it (its tracebacks); without it, its first error in one line",
    )


def cluster_table(args: argparse.Namespace, cwd: Path, base: object = None) -> dict[str, Any] | None:
    """The `[cluster]` table the options give, over `base` (a config file's `cluster`); None when neither."""
    table: dict[str, Any] = {}
    if isinstance(base, str):
        table["address"] = base
    elif isinstance(base, dict):
        table.update(base)
    if args.cluster is not None:
        table["address"] = args.cluster
    for key, value in (("ca_file", args.cluster_ca), ("cert", args.cluster_cert), ("key", args.cluster_key)):
        if value is not None:
            table[key] = str(cwd / value)
    return table or None
