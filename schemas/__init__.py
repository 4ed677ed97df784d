"""Flatbuffer schemas the project reads and writes, and the code generated from them.

- `armnn.fbs`, `mps.fbs`, `tosa.fbs`: the schemas (package data), each with a first line naming its source;
  `tosa_0_100.fbs`: the seed's older TOSA layout (0.90 semantics, stamped 0.100.0 draft), for `--tosa-version 0.100-draft`.
- `tosa_generated.py`, `tosa_0_100_generated.py`: what `flatc --python --gen-onefile` makes of the schemas
  the `.tosa` writers build with (committed; `regenerate.py` remakes them and `--check` tells whether they
  are current). Nothing at run time uses flatc's code for `armnn.fbs` and `mps.fbs` (the readers are
  schema-driven), so it is not shipped: the tests make it with flatc (tests/conftest.py `flatc_module`).
- `fbs`: a parser for the .fbs language subset these schemas use -> a `Schema` model.
- `flatread`: a schema-driven, bounds-checked reader (`FlatBuffer`, `Table`); `verify`: a whole-buffer
  verifier. Both raise `nn2tosa.diagnostics.InvalidInputError` on corrupt input and nothing else.

Typical use:
    from nn2tosa.schemas import load_schema
    from nn2tosa.schemas.flatread import FlatBuffer
    from nn2tosa.schemas.verify import verify_buffer
    fb = FlatBuffer(data, load_schema("armnn"))
    verify_buffer(fb)
    for layer in fb.root()["layers"]: ...
"""
from __future__ import annotations

import functools
from pathlib import Path

from .fbs import Schema, SchemaError, parse_schema

__all__ = ["COMMITTED_CODE", "SCHEMA_NAMES", "Schema", "SchemaError", "load_schema", "schema_text"]

SCHEMA_NAMES = ("armnn", "mps", "tosa", "tosa_0_100")
# The schemas whose flatc code the package ships (<name>_generated.py): the .tosa writers use it.
COMMITTED_CODE = ("tosa", "tosa_0_100")


def schema_text(name: str) -> str:
    """The text of the packaged schema `name` (one of SCHEMA_NAMES)."""
    if name not in SCHEMA_NAMES:
        raise ValueError(f"unknown schema {name!r}; known: {', '.join(SCHEMA_NAMES)}")
    return _package_file(f"{name}.fbs")


def _package_file(path: str) -> str:
    """A file of this package as text: beside this module (an installed or editable package: no
    importlib.resources, which imports zipfile & co. at every start), else through the import system."""
    beside = Path(__file__).parent / path
    if beside.is_file():
        return beside.read_text(encoding="utf-8")
    from importlib import resources

    return resources.files(__name__).joinpath(path).read_text(encoding="utf-8")


@functools.lru_cache(maxsize=None)
def load_schema(name: str) -> Schema:
    """The parsed packaged schema `name` (one of SCHEMA_NAMES); parsed once per process.

    The returned model is shared: treat it as read-only.
    """
    text = schema_text(name)

    # Includes resolve against the package folder, the way flatc resolves them beside the file.
    return parse_schema(text, filename=f"{name}.fbs", loader=_package_file)
