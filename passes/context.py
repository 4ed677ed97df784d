"""What a conversion tells its passes (`PassContext`: typed options) and what they tell it back (`Remarks`:
typed findings for the ConversionReport), instead of strings in `graph.meta`.

The PassManager runs every pass of a pipeline under its context (`PassManager(..., context=PassContext(...))`;
the default is litert semantics, no NPU target, unsupported ops raised): a pass, or a lowering rule it runs,
reads it with `pass_context()`, as code reads the resource limits in force with `nn2tosa.limits.current()`,
and adds what the report should say to `pass_context().remarks`. After the run the caller reads
`context.remarks`: api.convert puts them into the report (nn2tosa/conversion.py: finish), a partial conversion
reads which ops were left unconverted from `remarks.unsupported`.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

from nn2tosa.diagnostics import Unsupported, UnsupportedError


@dataclass
class Remarks:
    """What the passes of one conversion report (each list in the order found)."""

    boundary_changes: list[str] = field(default_factory=list)  # "input x: ui8 as i8": types TOSA cannot have
    semantics_dependent: list[str] = field(default_factory=list)  # where the integers depend on the semantics
    npu_choices: list[str] = field(default_factory=list)  # "location: pattern -> form (why)" for the NPU target
    unsupported: list[Unsupported] = field(default_factory=list)  # left in place (PassContext.keep_unsupported)

    @classmethod
    def merged(cls, remarks: Iterable[Remarks]) -> Remarks:
        """All of `remarks` in one, in order (the functions of a partial conversion)."""
        out = cls()
        for r in remarks:
            out.boundary_changes += r.boundary_changes
            out.semantics_dependent += r.semantics_dependent
            out.npu_choices += r.npu_choices
            out.unsupported += r.unsupported
        return out


@dataclass(frozen=True)
class PassContext:
    """The options passes and lowering rules consult (nn2tosa.options.ConvertOptions holds them for a
    conversion), and the remarks they collect."""

    semantics: str = "litert"  # whose integers a quantized op computes (lowering/semantics.py)
    target: str | None = None  # an NPU preset (lowering/npu_target.py), None for none
    keep_unsupported: bool = False  # a partial conversion: ops that do not convert stay, listed in remarks
    remarks: Remarks = field(default_factory=Remarks, compare=False)


_current: ContextVar[PassContext | None] = ContextVar("pass_context", default=None)


def pass_context() -> PassContext:
    """The context of the pass running now (a default one, whose remarks nobody reads, outside any run)."""
    context = _current.get()
    return context if context is not None else PassContext()


@contextmanager
def running_with(context: PassContext) -> Iterator[PassContext]:
    """Run the passes inside the block under `context` (what PassManager.run does)."""
    token = _current.set(context)
    try:
        yield context
    finally:
        _current.reset(token)


def report_unsupported(items: list[Unsupported]) -> None:
    """Raise UnsupportedError listing `items` (nothing when there are none), or keep them in the remarks
    when the context asks to keep unsupported ops in place (a partial conversion)."""
    if not items:
        return
    context = pass_context()
    if context.keep_unsupported:
        context.remarks.unsupported.extend(items)
        return
    raise UnsupportedError(items)
