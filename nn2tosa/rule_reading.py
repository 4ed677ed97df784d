"""What a rule function can create, read from its code: the op names its string literals spell and
the typed builder methods it names (`ctx.tosa.add`, or unbound: `TosaBuilder.add`, also as table rows), the rows of the tables it indexes and what the
helpers it calls can create (followed through its package and the builder classes), from the source
(`ast`), or from the bytecode of a lambda in a table row.
"Can create" is a reading of the code, not a run. nn2tosa.docs lists it for every rule.
"""
from __future__ import annotations

import ast
import inspect
import textwrap
import types
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Reading:
    """What a rule's code can create (op names with one prefix): `own`, by the rule itself (its string
    literals naming ops, the rows of tables it indexes, the builders of a dispatch table it indexes),
    and `ops`, those plus what the helpers it calls can create."""

    own: set[str] = field(default_factory=set)
    ops: set[str] = field(default_factory=set)

    def merge(self, inner: Reading, own: bool) -> None:
        if own:
            self.own |= inner.own
        self.ops |= inner.ops


@dataclass
class _Summary:
    """What one function's source says, whatever the key: op literals, tables it indexes, functions it
    calls."""

    literals: set[str] = field(default_factory=set)
    tables: list[dict] = field(default_factory=list)
    calls: list[Callable] = field(default_factory=list)


class CodeReader:
    """Reads rule functions through their source (ast): op-name literals, module tables the code
    indexes; follows calls into functions of `package`, and a call `x.name(...)` into the method
    `name` of `classes` (the builders rules use) and of the package's classes the function's module
    knows (so that what is read does not depend on import order). `builder`: the typed builder class,
    whose methods are named for the ops they build (a method handed on, `TosaBuilder.conv2d`, or a
    table row of them builds that op)."""

    def __init__(self, prefix: str, package: str, classes: Iterable[type],
                 implied: Mapping[str, Iterable[Callable]] | None = None, builder: type | None = None):
        from nn2tosa.ir import ops_of

        self.prefix = prefix
        self.package = package
        self.classes = list(classes)
        # op -> what a typed builder's method of it calls besides (ctx.tosa.add: ctx.same_rank)
        self.implied = {op: list(fns) for op, fns in (implied or {}).items()}
        self.known = frozenset(d.name for d in ops_of(prefix.rstrip(".")))
        self.builder = builder
        self._readings: dict[Any, Reading] = {}
        self._summaries: dict[Any, _Summary] = {}

    def read(self, fn: Callable, key: str | None = None) -> Reading:
        """What `fn` can create when it handles `key` (the layer type, node type or nn op it is the rule
        of): a table that has `key` among its keys contributes only its row for `key` (a rule shared by
        a table's rows reads its own row; a dispatch table leads to the key's own builder), other
        tables all their rows."""
        cache_key = (getattr(fn, "__code__", fn), key)
        if cache_key in self._readings:
            return self._readings[cache_key]
        result = self._readings[cache_key] = Reading()  # a recursive call sees the partial reading
        summary = self._summary(fn)
        result.own |= summary.literals
        for table in summary.tables:
            rows = [table[key]] if key is not None and key in table else list(table.values())
            for row in rows:
                for item in row if isinstance(row, (tuple, list)) else (row,):
                    if isinstance(item, str) and item in self.known:
                        result.own.add(item)
                    elif self._builder_method(item):
                        result.own.add(self._builder_method(item))  # a table of the typed builder's methods
                        for implied in self.implied.get(self._builder_method(item), ()):
                            result.merge(self.read(implied, key), own=False)
                    elif isinstance(item, types.FunctionType) and item.__module__.startswith(self.package):
                        result.merge(self.read(item, key), own=True)  # a dispatch table of builders
        for target in summary.calls:
            result.merge(self.read(target, key), own=False)
        result.ops |= result.own
        return result

    def _summary(self, fn: Callable) -> _Summary:
        code = getattr(fn, "__code__", fn)
        if code in self._summaries:
            return self._summaries[code]
        summary = self._summaries[code] = _Summary()
        scope = getattr(fn, "__globals__", {})
        classes = self.classes + [c for c in scope.values() if isinstance(c, type)
                                  and c.__module__.startswith(self.package) and c not in self.classes]
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
        except (OSError, TypeError, SyntaxError):  # a lambda in a table row: its source is not a statement
            if not isinstance(code, types.CodeType):
                raise
            self._from_bytecode(code, scope, classes, summary)
            return summary
        # a test such as `op == "nn.x"` creates nothing; a piece of an f-string is not a whole name
        compared = {id(n) for c in ast.walk(tree) if isinstance(c, ast.Compare) for n in ast.walk(c)}
        pieces = {id(n) for j in ast.walk(tree) if isinstance(j, ast.JoinedStr) for n in j.values}
        for node in ast.walk(tree):
            if id(node) in compared:
                continue
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in pieces:
                if node.value in self.known:
                    summary.literals.add(node.value)
            elif isinstance(node, ast.JoinedStr):
                summary.literals |= self._pattern(node)
            elif isinstance(node, ast.Attribute) and self._built(node) in self.known:
                summary.literals.add(self._built(node))  # ctx.tosa.add: the typed builder's method of tosa.add
                for target in self.implied.get(self._built(node), ()):
                    self._callee(target, classes, summary)
            elif isinstance(node, ast.Call):
                self._call(node, scope, classes, summary)
            elif isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
                self._table(scope.get(node.value.id), summary)
        return summary

    def _from_bytecode(self, code: types.CodeType, scope: dict, classes: list[type], summary: _Summary) -> None:
        """The same facts from a code object: its string constants and the names it uses."""
        for const in code.co_consts:
            if isinstance(const, str) and const in self.known:
                summary.literals.add(const)
            elif isinstance(const, types.CodeType):
                self._from_bytecode(const, scope, classes, summary)
        built = self.prefix.rstrip(".") in code.co_names or (  # a lambda calling ctx.tosa.<op>, TosaBuilder.<op>
            self.builder is not None and self.builder.__name__ in code.co_names)
        for name in code.co_names:
            if built and self.prefix + name.rstrip("_") in self.known:
                summary.literals.add(self.prefix + name.rstrip("_"))
                for implied in self.implied.get(self.prefix + name.rstrip("_"), ()):
                    self._callee(implied, classes, summary)
            for target in [scope.get(name), *(getattr(cls, name, None) for cls in classes)]:
                self._callee(target, classes, summary)
            self._table(scope.get(name), summary)

    def _callee(self, target: Any, classes: list[type], summary: _Summary) -> None:
        if isinstance(target, property):
            target = target.fget
        if isinstance(target, types.FunctionType) and (target.__module__.startswith(self.package)
                                                       or any(_defined_in(target, c) for c in classes)):
            if target not in summary.calls:
                summary.calls.append(target)

    def _call(self, call: ast.Call, scope: dict, classes: list[type], summary: _Summary) -> None:
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr == "get" and isinstance(func.value, ast.Name):
            self._table(scope.get(func.value.id), summary)  # TABLE.get(...)
        targets = []
        if isinstance(func, ast.Name):
            targets.append(scope.get(func.id))
        elif isinstance(func, ast.Attribute):
            targets.extend(getattr(cls, func.attr, None) for cls in classes)
        for target in targets:
            self._callee(target, classes, summary)

    def _built(self, node: ast.Attribute) -> str:
        """"tosa.add" for `<anything>.tosa.add` or `TosaBuilder.add` (a typed builder's method, named for
        the op it builds, a Python keyword with "_" appended), "" for any other attribute."""
        holder = node.value
        dialect = self.prefix.rstrip(".")
        if (isinstance(holder, ast.Attribute) and holder.attr == dialect) or (
                isinstance(holder, ast.Name) and (holder.id == dialect or (
                    self.builder is not None and holder.id == self.builder.__name__))):
            return self.prefix + node.attr.rstrip("_")
        return ""

    def _builder_method(self, item: Any) -> str:
        """"tosa.add" for the builder's method `TosaBuilder.add`, "" for anything else."""
        if not (self.builder is not None and isinstance(item, types.FunctionType) and _defined_in(item, self.builder)):
            return ""
        op = self.prefix + item.__name__.rstrip("_")
        return op if op in self.known else ""

    @staticmethod
    def _table(table: Any, summary: _Summary) -> None:
        if isinstance(table, dict) and not any(t is table for t in summary.tables):
            summary.tables.append(table)

    def _pattern(self, node: ast.JoinedStr) -> set[str]:
        """f"nn.avg_pool{suffix}": the registered ops its fixed text can begin."""
        head = node.values[0] if node.values else None
        if not (isinstance(head, ast.Constant) and isinstance(head.value, str) and head.value.startswith(self.prefix)
                and len(head.value) > len(self.prefix)):
            return set()
        return {op for op in self.known if op.startswith(head.value)}


def _defined_in(fn: types.FunctionType, cls: type) -> bool:
    return fn.__qualname__.startswith(cls.__name__ + ".")
