"""Where a run's Dask cluster is (`cluster = "tcp://host:8786"` or a `[cluster]` table): the config model alone,
apart from `referee.cluster.dask` (the Dask coordinator and worker), so that reading a config loads nothing of Dask or
of the play machinery."""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["DEFAULT_PORT", "ClusterConfig", "normalize_address"]

DEFAULT_PORT = 8786
_ADDRESS = re.compile(r"^(tcp|tls)://(\[[0-9A-Fa-f:]+\]|[A-Za-z0-9.-]+)(?::(\d{1,5}))?$")


class ClusterConfig(BaseModel):
    """Where the Dask scheduler is, and the certificates for a tls:// one: `cluster = "tcp://host:8786"`
    in a tournament config, or a `[cluster]` table with these keys."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    address: str = Field(description="The scheduler: tcp://HOST:PORT (a trusted network) or tls://HOST:PORT.")
    ca_file: Path | None = Field(
        default=None, description="tls://: the CA certificate (PEM) that signed every certificate."
    )
    cert: Path | None = Field(default=None, description="tls://: this client's certificate (PEM).")
    key: Path | None = Field(default=None, description="tls://: this client's private key (PEM).")

    @model_validator(mode="after")
    def _check(self) -> ClusterConfig:
        address = normalize_address(self.address)
        if address != self.address:
            object.__setattr__(self, "address", address)
        given = [name for name in ("ca_file", "cert", "key") if getattr(self, name) is not None]
        if address.startswith("tls://") and len(given) < 3:
            missing = [name for name in ("ca_file", "cert", "key") if name not in given]
            raise ValueError(
                f"a tls:// scheduler needs ca_file, cert and key; missing {', '.join(missing)}"
                " (--cluster-ca, --cluster-cert, --cluster-key on the command line)"
            )
        if address.startswith("tcp://") and given:
            raise ValueError(
                f"{', '.join(given)} given for a tcp:// scheduler, which does not use certificates;"
                " use a tls:// address, or leave the certificates out"
            )
        return self

    def resolved(self, base_dir: Path) -> ClusterConfig:
        """The certificate paths made absolute, relative to `base_dir` (a config file's folder)."""
        update = {
            name: path if path.is_absolute() else base_dir / path
            for name in ("ca_file", "cert", "key")
            if (path := getattr(self, name)) is not None
        }
        return self.model_copy(update=update)


def normalize_address(text: str) -> str:
    """tcp://HOST:PORT or tls://HOST:PORT (HOST:PORT alone means tcp://, no port means 8786); ValueError."""
    text = text.strip()
    if "://" not in text:
        text = f"tcp://{text}"
    match = _ADDRESS.match(text)
    if match is None:
        raise ValueError(
            f"{text!r} is not a scheduler address; give tcp://HOST:PORT (e.g. tcp://10.0.0.5:{DEFAULT_PORT})"
            " or tls://HOST:PORT"
        )
    port = int(match.group(3) or DEFAULT_PORT)
    if not 0 < port < 65536:
        raise ValueError(f"{text!r}: port {port} is out of range (1 to 65535)")
    return f"{match.group(1)}://{match.group(2)}:{port}"
