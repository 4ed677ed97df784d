"""One-off check (issue 29): flatc's binary schema agrees with the hand-written .fbs parser.

    python -m nn2tosa.schemas.compare_fbs_bfbs

For each packaged schema, compile it with flatc (--binary --schema --bfbs-builtins --bfbs-comments),
load it with bfbs.load_bfbs, and compare with fbs.parse_schema on every table (field, vtable slot,
default, deprecated/required/hidden/union links, attributes, doc), struct (size, alignment, field
offsets and sizes), enum (underlying type, values, bit_flags) and union (members, tag values, tables).
"""
from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from . import SCHEMA_NAMES, _package_file, schema_text
from .bfbs import load_bfbs
from .fbs import parse_schema
from .regenerate import find_flatc

HERE = Path(__file__).resolve().parent


def same(a: object, b: object) -> bool:
    """Equal, types included (True is not 1, 0 is not 0.0), NaN equal to NaN, the two modules'
    same-named dataclasses compared field by field: their reprs say all of that."""
    return repr(a) == repr(b)


def compare(name: str, flatc: str, tmp: Path, text: str | None = None, includes: dict[str, str] | None = None) -> list[str]:
    """Compare on packaged schema `name`, or on schema `text` (its `include`s given as {path: text})."""
    source = HERE / f"{name}.fbs"
    if text is not None:
        source = tmp / f"{name}.fbs"
        source.write_text(text)
        for path, included in (includes or {}).items():
            (tmp / path).write_text(included)
    subprocess.run([flatc, "--binary", "--schema", "--bfbs-builtins", "--bfbs-comments", "--no-warnings",
                    "-o", str(tmp), str(source)], check=True)
    new = load_bfbs((tmp / f"{name}.bfbs").read_bytes(), f"{name}.bfbs")
    if text is None:
        old = parse_schema(schema_text(name), filename=f"{name}.fbs", loader=_package_file)
    else:
        old = parse_schema(text, filename=f"{name}.fbs", loader=(includes or {}).__getitem__)
    out: list[str] = []
    checks = 0

    def eq(what: str, a: object, b: object) -> None:
        nonlocal checks
        checks += 1
        if not same(a, b):
            out.append(f"{name}: {what}: fbs.py {a!r} != bfbs {b!r}")

    for attr in ("namespace", "file_identifier", "file_extension", "root_type"):
        eq(attr, getattr(old, attr), getattr(new, attr))
    for kind in ("tables", "structs", "enums", "unions"):
        eq(f"{kind} names", sorted(getattr(old, kind)), sorted(getattr(new, kind)))
    for tname, t in old.tables.items():
        n = new.tables[tname]
        eq(f"table {tname} fields (slot order)", [f.name for f in t.fields], [f.name for f in n.fields])
        eq(f"table {tname} attributes", t.attributes, n.attributes)
        eq(f"table {tname} doc", t.doc, n.doc)
        eq(f"table {tname} namespace", t.namespace, n.namespace)
        for f in t.fields:
            g = n.by_name[f.name]
            for attr in ("type", "slot", "voffset", "default", "deprecated", "required", "hidden", "union_field",
                         "type_field", "attributes", "doc"):
                eq(f"{tname}.{f.name}.{attr}", getattr(f, attr), getattr(g, attr))
    for sname, s in old.structs.items():
        n = new.structs[sname]
        for attr in ("size", "alignment", "namespace", "attributes", "doc"):
            eq(f"struct {sname}.{attr}", getattr(s, attr), getattr(n, attr))
        eq(f"struct {sname} fields", [f.name for f in s.fields], [f.name for f in n.fields])
        for f, g in zip(s.fields, n.fields):
            for attr in ("type", "offset", "size", "attributes", "doc"):
                eq(f"{sname}.{f.name}.{attr}", getattr(f, attr), getattr(g, attr))
    for ename, e in old.enums.items():
        n = new.enums[ename]
        for attr in ("underlying", "names", "namespace", "bit_flags", "attributes", "doc"):
            eq(f"enum {ename}.{attr}", getattr(e, attr), getattr(n, attr))
        eq(f"enum {ename}.values", sorted(e.values.items()), sorted(n.values.items()))
    for uname, u in old.unions.items():
        n = new.unions[uname]
        eq(f"union {uname} members", u.members, n.members)
        for attr in ("by_value", "by_name", "namespace", "attributes", "doc"):
            eq(f"union {uname}.{attr}", getattr(u, attr), getattr(n, attr))
    print(f"{name}: {len(old.tables)} tables, {len(old.structs)} structs, {len(old.enums)} enums, "
          f"{len(old.unions)} unions; {checks} comparisons, {len(out)} differences")
    return out


def main() -> int:
    flatc = find_flatc()
    if flatc is None:
        print("flatc not found", file=sys.stderr)
        return 2
    diffs: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in SCHEMA_NAMES:
            diffs += compare(name, flatc, Path(tmp))
        # The schemas the tests wrote to cover the language's corners (arrays, force_align, bit_flags,
        # explicit ids, nan/inf/null defaults, union vectors and aliases, includes), and .pte's subset.
        sys.path.insert(0, str(HERE.parent / "tests"))
        import test_schemas as ts

        from nn2tosa.frontend.mps import pte

        diffs += compare("layout", flatc, Path(tmp), ts.LAYOUT_SCHEMA)
        diffs += compare("features", flatc, Path(tmp), ts.FEATURES_SCHEMA.replace('attribute my_attr;', 'attribute "my_attr";').replace("(priority: 3, my_attr)", "(priority: 3, my_attr: \"x\")").replace("n: [Other];", "n: [Other.Ns.Other];"), {"other.fbs": ts.OTHER_SCHEMA})
        diffs += compare("program", flatc, Path(tmp), pte.PROGRAM_FBS)
    print("\n".join(diffs))
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
