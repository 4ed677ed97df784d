"""A whole-buffer flatbuffer verifier: check everything reachable from the root, once.

Frontends call `verify_buffer(fb)` before reading, so that a corrupt file fails with one
InvalidInputError up front instead of somewhere in the middle of a conversion. It performs the checks
`flatread` performs on each read (it uses the same code), plus `required` fields, on every table,
vector, string and union reachable from the root.

The work is bounded against hostile buffers: every table visited and every offset followed counts
towards a budget proportional to the buffer size (`max_tables`, default one per 4 bytes plus 16). A
buffer in which no subtree is shared cannot reach more offsets than it holds, and each offset takes 4
bytes, so real files never come near it; a buffer whose offsets point many times at the same subtree
(a DAG, which makes naive tree walks explode) exceeds it and is rejected. Each string is decoded once.
So once a buffer passes, any walk of its whole tree (a frontend's, `Table.to_dict`) is linear too.
"""
from __future__ import annotations

from .flatread import (
    _STRING,
    _TABLE,
    _UNION,
    _VEC_BOOL,
    _VEC_NUM,
    _VEC_STRING,
    _VEC_STRUCT,
    _VEC_TABLE,
    _VEC_UNION,
    DEFAULT_MAX_DEPTH,
    FlatBuffer,
    Table,
)

__all__ = ["verify_buffer"]


def verify_buffer(fb: FlatBuffer, root_type: str | None = None, *, max_depth: int = DEFAULT_MAX_DEPTH, max_tables: int | None = None) -> None:
    """Check every table, vector, string and union reachable from the root of `fb`.

    Raises InvalidInputError (with the byte offset and path) on the first problem. `root_type`
    overrides the schema's root_type; `max_depth` bounds nesting; `max_tables` bounds the number of
    offsets followed (default: buffer size / 4 + 16).
    """
    budget = (fb.end - fb.base) // 4 + 16 if max_tables is None else max_tables
    root = fb.root(root_type)
    # Tables are walked once per path that reaches them (no de-duplication): the budget is what
    # keeps that linear, and it is what makes later whole-tree walks safe.
    strings: set[int] = set()  # positions of strings already decoded: each is decoded once
    stack: list[Table] = [root]
    visits = 0

    def spend(t: Table, count: int) -> None:
        nonlocal visits
        visits += count
        if visits > budget:
            t._fail(
                f"more than {budget} offsets to follow for a {fb.end - fb.base}-byte buffer "
                "(subtrees shared many times over: a hostile or corrupt file?)",
                t.offset,
            )

    def check_string(t: Table, target: int, name: str) -> None:
        if target not in strings:
            strings.add(target)
            t._string_at(target, name)

    while stack:
        t = stack.pop()
        spend(t, 1)
        if t._depth > max_depth:
            t._fail(f"tables nest deeper than {max_depth} levels (cyclic or hostile offsets?)", t.offset)
        for p in t._plans.values():
            pos = t._pos(p)  # checks that the field lies inside the table
            if pos == 0:
                if p.fdef.required:
                    t._fail(f"required field {p.name!r} is missing", t.offset, p.name)
                continue
            kind = p.kind
            name = p.name
            if kind == _TABLE:
                stack.append(t.get(name))
            elif kind == _UNION:
                value = t.get(name)  # checks the tag; a NONE tag leaves any payload unread
                if value is not None:
                    stack.append(value)
            elif kind == _STRING:
                spend(t, 1)
                check_string(t, t._deref(pos, name), name)
            elif kind in (_VEC_NUM, _VEC_BOOL, _VEC_STRUCT):
                spend(t, 1)
                t._vector(pos, p.esize, name)
            elif kind == _VEC_TABLE:
                vec = t.get(name)
                spend(t, 1 + len(vec))  # before creating the elements
                # Reversed, so that the walk (a stack) visits elements in order and an error names
                # the first bad element.
                stack.extend(reversed(list(vec)))
            elif kind == _VEC_STRING:
                start, n = t._vector(pos, 4, name)
                spend(t, 1 + n)
                for i in range(n):
                    check_string(t, t._deref(start + 4 * i, f"{name}[{i}]"), f"{name}[{i}]")
            elif kind == _VEC_UNION:
                spend(t, 1 + t.vector_span(name)[1])  # type: ignore[index]
                values = t.get(name)
                stack.extend(v for v in reversed(values) if v is not None)
            # Scalars and inline structs: `_pos` checked their bytes and any bit pattern is a value.
            # Enum values are not checked here (`Table.enum_name` checks them when used): a file
            # may carry values a newer writer added.

