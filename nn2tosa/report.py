"""The conversion report: what each source layer or node became, what the target needs, what it cost.

`convert` fills a `ConversionReport` as it runs (nn2tosa.api); `nn2tosa convert --report` prints
`format_text()` to stderr and `--report-json FILE` writes `as_dict()`.

Attribution works through locations: the frontends give every source op a Loc (Arm NN layer name
and index, MPS node index and type), and every op the passes create from it keeps that Loc, so
grouping the ops of a stage by Loc says what each source op became at that stage. A source op's
`status` comes from three such censuses (after legalization, after canonicalization, at the end):

    lowered    TOSA ops other than constants carry its location
    constant   a source constant (weights, biases, ...): TOSA constants or nothing (absorbed into users)
    folded     computed at compile time: only TOSA constants carry its location
    fused      it became nn ops, but canonicalize merged them into a neighbour (an activation into a
               clamp, a batch norm into a convolution's weights, cancelling transposes) or removed
               them as no-ops
    removed    it became no op at all (an identity, a layer whose result nothing reads)
    unsupported  left to the host (partial conversion only)
"""
from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Set
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nn2tosa.ir import Graph, Loc

# Source op statuses, in the order the text report explains them.
STATUSES = ("lowered", "constant", "folded", "fused", "removed", "unsupported")


def census(graph: Graph) -> dict[Loc | None, Counter]:
    """Op counts per location (graph inputs left out)."""
    from nn2tosa.ir import INPUT_OP

    counts: dict[Loc | None, Counter] = {}
    for _, data in graph.nx.nodes(data=True):
        if data["op"] != INPUT_OP:
            counts.setdefault(data["loc"], Counter())[data["op"]] += 1
    return counts


def constant_ops(dialects: Iterable[str] | None = None) -> frozenset[str]:
    """The op of each dialect that holds a constant (armnn.Constant, mps.constant, nn.constant, tosa.const):
    of every dialect, or of `dialects` only (looking one up imports it: an Arm NN conversion need not
    load the MPS dialect and its schema)."""
    from nn2tosa.ir import dialect
    from nn2tosa.ir.registry import DIALECT_MODULES

    ops = set()
    for name in DIALECT_MODULES if dialects is None else sorted(set(dialects) & set(DIALECT_MODULES)):
        d = dialect(name)
        if d is not None and d.constant_op:
            ops.add(d.constant_op)
    return frozenset(ops)


@dataclass
class SourceOp:
    """One source layer (Arm NN) or node (MPS) and what it became."""

    op: str  # e.g. "armnn.Convolution2d"
    loc: Loc | None
    status: str = "lowered"
    tosa: dict[str, int] = field(default_factory=dict)  # TOSA op name -> count at this location

    def as_dict(self) -> dict[str, Any]:
        return {
            "op": self.op,
            "name": self.loc.name if self.loc else None,
            "where": self.loc.detail if self.loc else None,
            "status": self.status,
            "tosa": dict(self.tosa),
        }


@dataclass
class ConversionReport:
    """Everything `convert` learnt about one converted graph (JSON-able through `as_dict`)."""

    model: str = ""
    format: str = ""
    version: str | None = None
    source_ops: list[SourceOp] = field(default_factory=list)
    tosa_ops: dict[str, int] = field(default_factory=dict)
    rewrites: dict[str, int] = field(default_factory=dict)  # canonicalize pattern -> times applied
    target: dict[str, Any] = field(default_factory=dict)  # Target.report()
    constant_count: int = 0
    constant_bytes: int = 0
    boundary_changes: list[str] = field(default_factory=list)
    semantics: str = ""  # whose integers quantized ops compute: litert or cpuref (lowering/semantics.py)
    semantics_dependent: list[str] = field(default_factory=list)  # layers whose integers depend on it
    npu_target: str = ""  # the --target preset (lowering/npu_target.py), "" for none
    npu_choices: list[str] = field(default_factory=list)  # "layer: pattern -> form (why)"
    npu_rule: str = ""  # what decided what the NPU runs: "vela 5.2.0" or "profile" (nn2tosa/npu_regions.py)
    timings: dict[str, float] = field(default_factory=dict)  # stage -> seconds, in the order run
    unsupported: list[str] = field(default_factory=list)  # partial conversion: what stays on the host
    functions: list[str] = field(default_factory=list)  # names of the TOSA functions

    def time(self, stage: str, seconds: float) -> None:
        self.timings[stage] = self.timings.get(stage, 0.0) + seconds

    # ---- filling in ------------------------------------------------------------------
    def attribute(self, source: list[tuple[str, Loc | None]], stages: dict[str, dict], final: Graph | Iterable[Graph],
                  host: Set[Loc] = frozenset()) -> None:
        """Fill `source_ops` from the source ops (op, loc) and the censuses taken after `legalize`
        and `canonicalize` (either may be missing), and the TOSA-level graph(s) `final`; `host`
        holds the locations of ops left unconverted by a partial conversion."""
        from nn2tosa.ir import Graph

        finals = [final] if isinstance(final, Graph) else list(final)
        end: dict[Loc | None, Counter] = {}
        for g in finals:
            for loc, counts in census(g).items():
                end.setdefault(loc, Counter()).update(counts)
        constants = constant_ops({op.split(".", 1)[0] for op, _ in source}
                                 | {op.split(".", 1)[0] for counts in end.values() for op in counts})
        legalized = stages.get("legalize")
        canonical = stages.get("canonicalize")
        self.source_ops = []
        for op, loc in source:
            tosa = dict(sorted(end.get(loc, Counter()).items()))
            self.source_ops.append(SourceOp(op, loc, _status(op, loc, tosa, legalized, canonical, constants, host),
                                            tosa))
        self.tosa_ops = dict(sorted(sum((Counter(g.histogram()) for g in finals), Counter()).items()))
        self.constant_count, self.constant_bytes = _constants(finals)

    # ---- output ----------------------------------------------------------------------
    def as_dict(self) -> dict[str, Any]:
        statuses = Counter(s.status for s in self.source_ops)
        return {
            "model": self.model,
            "format": self.format,
            "version": self.version,
            "functions": self.functions,
            "target": self.target,
            "tosa_ops": self.tosa_ops,
            "constants": {"count": self.constant_count, "bytes": self.constant_bytes},
            "boundary_changes": self.boundary_changes,
            "semantics": {"name": self.semantics, "dependent_layers": self.semantics_dependent},
            "npu_target": {"name": self.npu_target, "choices": self.npu_choices,
                           **({"rule": self.npu_rule} if self.npu_rule else {})},
            "source_ops": {k: statuses[k] for k in STATUSES if statuses[k]},
            "rewrites": self.rewrites,
            "unsupported": self.unsupported,
            "timings": {k: round(v, 6) for k, v in self.timings.items()},
            "layers": [s.as_dict() for s in self.source_ops],
        }

    def to_json(self) -> str:
        return json.dumps(self.as_dict(), indent=1)

    def format_text(self) -> str:
        """The human summary `convert --report` prints: one line per non-constant source op."""
        lines = []
        version = f" {self.version}" if self.version else ""
        n_ops = sum(self.tosa_ops.values())
        lines.append(f"{self.model}: {self.format}{version}, {len(self.source_ops)} source ops -> {n_ops} TOSA ops"
                     f"{_functions(self.functions)}, constants {_bytes(self.constant_bytes)}")
        t = self.target
        if t:
            ext = f", extensions {'+'.join(t['extensions'])}" if t.get("extensions") else ""
            lines.append(f"target: TOSA {t['specification_version']} {'+'.join(t['profiles']) or 'no profile'}{ext}, "
                         f"level {t['level']}")
            for item, why in t.get("reasons", {}).items():
                lines.append(f"  {item}: needed by {why}")
            for problem in t.get("problems", []):
                lines.append(f"  not in TOSA 1.0: {problem}")
        for change in self.boundary_changes:
            lines.append(f"boundary: {change}")
        if self.semantics_dependent:
            from nn2tosa.lowering.semantics import MEANING

            lines.append(f"semantics: {self.semantics} ({MEANING[self.semantics]}); "
                         f"{_layers(len(self.semantics_dependent))} on it: {', '.join(self.semantics_dependent)}")
        if self.npu_target:
            rule = {"": "", "profile": " (the profile rule decided what it runs: Vela is not installed)"}.get(
                self.npu_rule, f" ({self.npu_rule} decided what it runs)")
            lines.append(f"npu target: {self.npu_target}{rule}")
        for choice in self.npu_choices:
            lines.append(f"form: {choice}")
        for item in self.unsupported:
            lines.append(f"left to the host: {item}")
        statuses = Counter(s.status for s in self.source_ops)
        lines.append("source ops: " + ", ".join(f"{statuses[k]} {k}" for k in STATUSES if statuses[k]))
        width = max((len(_label(s)) for s in self.source_ops), default=0)
        for s in self.source_ops:
            if s.status == "constant":
                continue  # weights: counted above, one line each would drown the layers
            made = ", ".join(f"{op.split('.', 1)[1]} x{n}" for op, n in s.tosa.items())
            lines.append(f"  {_label(s):{width}}  {s.status:11} {made}".rstrip())
        if self.rewrites:
            lines.append("canonicalize: " + ", ".join(f"{k} x{v}" for k, v in self.rewrites.items()))
        if self.timings:
            total = sum(self.timings.values())
            lines.append("time: " + ", ".join(f"{k} {v:.3f}s" for k, v in self.timings.items())
                         + f" (total {total:.3f}s)")
        return "\n".join(lines) + "\n"


def _layers(n: int) -> str:
    return "1 layer depends" if n == 1 else f"{n} layers depend"


def _status(op: str, loc: Loc | None, tosa: dict[str, int], legalized: dict | None, canonical: dict | None,
            constants: frozenset[str], host: Set[Loc]) -> str:
    if loc is not None and loc in host:
        return "unsupported"
    if op in constants:
        return "constant"
    if any(name not in constants for name in tosa):
        return "lowered"
    if tosa:
        return "folded"
    if legalized is not None and canonical is not None and legalized.get(loc) and not canonical.get(loc):
        return "fused"
    return "removed"


def _constants(graphs: list[Graph]) -> tuple[int, int]:
    """Number of TOSA constants (tosa.const, tosa.const_shape) and the bytes of their data."""
    count = size = 0
    for g in graphs:
        for _, data in g.nx.nodes(data=True):
            if data["op"] in ("tosa.const", "tosa.const_shape"):
                count += 1
                values = data["attrs"]["values"]
                size += values.size * (8 if data["op"] == "tosa.const_shape" else values.itemsize)
    return count, size


def _label(s: SourceOp) -> str:
    kind = s.op.split(".", 1)[1]
    if s.loc is None:
        return kind
    if not s.loc.detail or s.loc.detail.endswith(kind):  # MPS locations name the node type already
        return f"{s.loc.name} ({s.loc.detail})" if s.loc.detail else f"{s.loc.name} {kind}"
    return f"{s.loc.name} ({s.loc.detail}) {kind}"


def _functions(names: list[str]) -> str:
    return f" in {len(names)} functions" if len(names) > 1 else ""


def _bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"  # pragma: no cover
