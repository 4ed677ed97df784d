"""The seed checks of bench/fuzz_long.py, remembered on disk: a seed's verdict unmutated, by content.

Before a campaign every seed runs unmutated through its kind's commands (the seeds nn2tosa already fails on
are left out): about 1,300 Arm NN seeds times three commands, the NPU seeds through Vela. That verdict
depends only on the seed's bytes (and, for `compare`, its dump's), on nn2tosa's code and data files, on the
tools' versions and on the engine's commands, limits and judge; all of these make the cache's key, so a
verdict is reused only where running the seed again would give the same one. A later run on the same code
(another kind, a run split over sessions, a restart) then runs only the seeds it has not seen.
"""
from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import sys
from pathlib import Path

DEFAULT_PATH = Path.home() / ".cache" / "nn2tosa-fuzz" / "seed-health.json"
# the distributions whose version can change a seed's verdict
DISTRIBUTIONS = ("nn2tosa", "numpy", "networkx", "flatbuffers", "xtc-mlir-python-bindings", "tosa-tools",
                 "ethos-u-vela")


def code_key(engine_files: list[Path], settings: str) -> str:
    """What decides a verdict besides the seed: every nn2tosa module loaded (the fuzz parent imports what the
    commands import), the schema files, the distributions' versions, the engine's own files and `settings`."""
    digest = hashlib.sha256(settings.encode())
    files = {Path(m.__file__) for name, m in list(sys.modules.items())
             if name.split(".", 1)[0] == "nn2tosa" and getattr(m, "__file__", None)}
    schemas = sys.modules.get("nn2tosa.schemas")
    if schemas is not None and getattr(schemas, "__file__", None):
        files |= {p for p in Path(schemas.__file__).parent.iterdir() if p.suffix in (".fbs", ".bfbs")}
    for path in sorted(files) + list(engine_files):
        digest.update(str(path.name).encode() + b"\0" + path.read_bytes())
    for name in DISTRIBUTIONS:
        try:
            version = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            version = "-"
        digest.update(f"{name}={version}\0".encode())
    return digest.hexdigest()


class SeedCache:
    """Verdicts by (kind, content digest) under one code key: "" for a seed that behaves, else the line
    saying why it is left out (without its path). Only the current key's verdicts are kept on save."""

    def __init__(self, path: Path, key: str):
        self.path, self.key = path, key
        try:
            stored = json.loads(path.read_text())
        except (OSError, ValueError):
            stored = {}
        self.verdicts: dict[str, str] = stored.get(key, {}) if isinstance(stored, dict) else {}

    @staticmethod
    def _entry(kind: str, files: list[Path]) -> str:
        digest = hashlib.sha256()
        for path in files:
            digest.update(path.read_bytes() + b"\0")
        return f"{kind}:{digest.hexdigest()}"

    def get(self, kind: str, files: list[Path]) -> str | None:
        return self.verdicts.get(self._entry(kind, files))

    def put(self, kind: str, files: list[Path], verdict: str) -> None:
        self.verdicts[self._entry(kind, files)] = verdict

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_name(f".{self.path.name}.{os.getpid()}")
        temporary.write_text(json.dumps({self.key: self.verdicts}))
        os.replace(temporary, self.path)  # another run saving at the same time loses at most its own additions
