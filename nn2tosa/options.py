"""The options of one model's conversion, listed once: `ConvertOptions`.

The API (`nn2tosa.convert(..., options=ConvertOptions(...))`, or its keywords, which build one), the command
line (`nn2tosa convert` builds one from its flags: `from_arguments`), a many-model run (`convert_many`'s
keywords: `from_keywords`) and `nn2tosa check` all take their per-model options from here, with their
validation: names of profiles, semantics, NPU targets, TOSA versions and state forms are checked when the
options are made (`ConvertOptions(semantics="x")` is a UsageError), and what goes with what (host with
partial; once the outputs are known, a Vela report with a target and Vela, external data with TOSA 1.0) by
`check_combination`, which names the options as the caller spells them (`host=` for the API, `--host` for
the command line), as they always were.

Importing this module imports neither numpy nor MLIR: the command line reads its choices from here.
"""
from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from nn2tosa.dialects.integer_semantics import SEMANTICS  # whose integers (nn2tosa.lowering.semantics)
from nn2tosa.diagnostics import UsageError
from nn2tosa.limits import Limits

if TYPE_CHECKING:
    from nn2tosa.passes.context import PassContext

# How a program's mutable buffers are kept (`state`, the command line's --state).
STATE_FORMS = ("variables", "io")
# Layouts a .tosa file can have (`tosa_version`, --tosa-version).
TOSA_VERSIONS = ("1.0", "0.100-draft")

# Option groups (a field's metadata "stage"): what `nn2tosa.convert` computes from, and how the outputs of
# `convert_file` (the command line, convert_many) are written or checked. `convert` refuses writing options.
CONVERT, WRITE = "convert", "write"


@dataclass(frozen=True)
class ConvertOptions:
    """Every per-model option (see the module doc); each field's docstring says what it does. Defaults are the
    command line's."""

    # ---- how the model is converted (nn2tosa.convert)
    profile: str | tuple[str, ...] | None = field(default=None, metadata={"stage": CONVERT})
    """TOSA 1.0 profiles and extensions the consumer implements ("pro_int", "pro_fp+bf16", or a tuple of names):
    a model needing more is UnsupportedError naming the ops, and the output's `tosa.target_env` is that
    target. None: whatever the model needs (an NPU target's profile when `target` is given)."""
    semantics: str = field(default="litert", metadata={"stage": CONVERT})
    """whose integers a quantized graph computes: "litert" (TFLite's integer kernels) or "cpuref" (Arm NN
    CpuRef's float32 emulation of them); lowering/semantics.py."""
    target: str | None = field(default=None, metadata={"stage": CONVERT})
    """an Ethos-U NPU preset, "ethos-u55", "ethos-u65" or "ethos-u85" (lowering/npu_target.py): the forms
    Arm's Vela maps on that NPU where they differ, and its profile (PRO-INT with EXT-INT16, EXT-INT4,
    EXT-DOUBLEROUND) unless `profile` is given. With Vela installed the output is compiled for that NPU: an
    op it refuses is UnsupportedError naming it, or, with partial, goes to the host (nn2tosa/npu_regions.py)."""
    partial: bool = field(default=False, metadata={"stage": CONVERT})
    """convert the TOSA-expressible regions around unsupported ops, one function each (nn2tosa.partial; the
    Result's `partition` says how to stitch them); otherwise an unsupported op is UnsupportedError listing
    all of them."""
    host: tuple[str, ...] = field(default=(), metadata={"stage": CONVERT})
    """with partial: ops to leave to the host although they convert, op types ("DetectionPostProcess") or
    layer/node names; one matching nothing is UsageError."""
    keep_int4: bool = field(default=False, metadata={"stage": CONVERT})
    """keep int4 weights as int4 (EXT-INT4) instead of folding them into float weights; where TOSA 1.0 cannot
    (lowering/quant.py says why), UnsupportedError."""
    state: str = field(default="variables", metadata={"stage": CONVERT})
    """how a program's mutable buffers (an ExecuTorch KV cache) are kept between calls: "variables" (TOSA
    variables, lowering/variables.py) or "io" (extra inputs and outputs named after each buffer, for
    runtimes without variables). A partial conversion keeps them as "io"."""
    passes: tuple[str, ...] | None = field(default=None, metadata={"stage": CONVERT})
    """the pass pipeline (names of `nn2tosa opt --list-passes`); None: the format's TOSA pipeline."""
    limits: Limits | None = field(default=None, metadata={"stage": CONVERT})
    """the resource limits of the conversion; None: those in force (nn2tosa.limits.current())."""
    # ---- how its outputs are written (nn2tosa.api.convert_file: the command line and convert_many)
    tosa_version: str = field(default="1.0", metadata={"stage": WRITE})
    """the .tosa layout (TOSA_VERSIONS)."""
    external_data: bool = field(default=False, metadata={"stage": WRITE})
    """.tosa 1.0: tensor data of 64 KiB or more after the flatbuffer."""
    elide_constants: bool = field(default=False, metadata={"stage": WRITE})
    """MLIR text with large constants elided."""
    mlir_pretty: bool = field(default=False, metadata={"stage": WRITE})
    """MLIR text in the pretty form instead of the generic one."""
    validate: bool = field(default=False, metadata={"stage": WRITE})
    """run MLIR's tosa-validate for the output's target; a failure is an internal error."""
    mlir_pipeline: str | None = field(default=None, metadata={"stage": WRITE})
    """an MLIR pass pipeline run on the module before MLIR outputs are written."""
    vela_report: bool = field(default=False, metadata={"stage": WRITE})
    """compile every NPU region with Vela and report its cycles and memory (needs `target` and Vela)."""

    def __post_init__(self) -> None:
        # normalise the sequences (a list given for host or passes) so that the options stay hashable
        if not isinstance(self.host, tuple):
            object.__setattr__(self, "host", tuple(self.host))
        if self.passes is not None and not isinstance(self.passes, tuple):
            object.__setattr__(self, "passes", tuple(self.passes))
        if self.profile is not None and not isinstance(self.profile, (str, tuple)):
            object.__setattr__(self, "profile", tuple(self.profile))
        if self.state not in STATE_FORMS:
            raise UsageError(f"state={self.state!r}: one of {', '.join(STATE_FORMS)}")
        if self.semantics not in SEMANTICS:
            raise UsageError(f"semantics {self.semantics!r}: litert or cpuref")
        if self.target is not None:
            from nn2tosa.lowering.npu_target import NPU_TARGETS

            if self.target not in NPU_TARGETS:
                raise UsageError(f"target {self.target!r}: one of {', '.join(NPU_TARGETS)}")
        if self.tosa_version not in TOSA_VERSIONS:
            raise UsageError(f"tosa_version {self.tosa_version!r}: one of {', '.join(TOSA_VERSIONS)}")
        if self.profile is not None:
            parse_profile(self.profile)

    # ---------------------------------------------------------------------------- building one
    @classmethod
    def names(cls, stage: str | None = None) -> tuple[str, ...]:
        """The option names (of one stage: CONVERT or WRITE)."""
        return tuple(f.name for f in fields(cls) if stage is None or f.metadata["stage"] == stage)

    @classmethod
    def from_keywords(cls, keywords: Mapping[str, Any], *, what: str, stages: Sequence[str] = (CONVERT, WRITE),
                      limits_flat: bool = False) -> ConvertOptions:
        """Options from keyword arguments (those of `stages`); `limits_flat`: the resource limits may be given
        one by one (max_tensor_bytes=..., as convert_many takes them). An unknown name is a UsageError naming
        `what` took it and what it knows."""
        known = [n for n in cls.names() if any(n in cls.names(s) for s in stages)]
        limit_names = [f.name for f in fields(Limits)] if limits_flat else []
        unknown = sorted(set(keywords) - set(known) - set(limit_names))
        if unknown:
            listed = [n for n in known if n != "limits" or not limits_flat] + sorted(limit_names)
            raise UsageError(f"{what}: unknown option(s) {', '.join(unknown)} (known: {', '.join(listed)})")
        options = {k: v for k, v in keywords.items() if k not in limit_names}
        limits = {k: v for k, v in keywords.items() if k in limit_names}
        if limits:
            options["limits"] = Limits(**limits)
        return cls(**options)

    @classmethod
    def from_arguments(cls, args: argparse.Namespace) -> ConvertOptions:
        """Options from a parsed command line (the flags of `nn2tosa convert`, or the subset another command
        has: those it lacks keep their defaults). The resource limits are always set (their flags' defaults)."""
        values = {f.name: getattr(args, f.name) for f in fields(cls) if f.name != "limits" and hasattr(args, f.name)}
        return cls(**values, limits=limits_from_arguments(args))

    # ---------------------------------------------------------------------------- what goes with what
    def check_combination(self, *, flags: bool, writes_tosa: bool | None = None) -> None:
        """UsageError for options that do not go together, named as the command line (`flags`) or the API
        spells them. `writes_tosa` (a .tosa among the outputs; None: the outputs are not known here, as in
        `convert`) also checks the writing options: external data, a Vela report."""
        if self.host and not self.partial:
            raise UsageError("--host leaves ops to the host, which only a partial conversion does: add --partial"
                             if flags else "host= names ops to leave to the host, which only a partial conversion "
                                           "does (partial=True)")
        if writes_tosa is None:
            return
        if self.external_data and self.tosa_version != "1.0" and writes_tosa:
            raise UsageError(f"--external-data needs --tosa-version 1.0 (the {self.tosa_version} layout has no "
                             "offset/size fields)")
        if self.vela_report:
            from nn2tosa.vela_support import vela_version

            if self.target is None:
                raise UsageError("--vela-report compiles for the NPU of --target: add --target")
            if vela_version() is None:
                raise UsageError("--vela-report needs Vela: pip install nn2tosa[vela]")

    def pass_context(self, *, keep_unsupported: bool = False) -> PassContext:
        """A fresh context for one run of the passes (nn2tosa.passes.context): these options' semantics and
        target; `keep_unsupported` for a partial conversion's runs."""
        from nn2tosa.passes.context import PassContext

        return PassContext(self.semantics, self.target, keep_unsupported)

    def npu_profile(self) -> str | tuple[str, ...] | None:
        """The profile to convert for: the one asked for, else the NPU target's, else None (what the model needs)."""
        if self.profile is not None or self.target is None:
            return self.profile
        from nn2tosa.lowering.npu_target import NPU_TARGETS

        return NPU_TARGETS[self.target].profile


def limits_from_arguments(args: argparse.Namespace) -> Limits:
    """The resource limits of a parsed command line (one flag per Limits field; those absent keep their default)."""
    return Limits(**{f.name: getattr(args, f.name) for f in fields(Limits) if hasattr(args, f.name)})


def parse_profile(profile: str | Sequence[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """"pro_int+int16" (or "pro_int,int16", or a list) -> (profiles, extensions); unknown names are a UsageError."""
    from nn2tosa.dialects.tosa_target import EXTENSIONS, PROFILES

    items = [profile] if isinstance(profile, str) else list(profile)
    names = [n.strip() for item in items for n in item.replace("+", ",").split(",") if n.strip()]
    unknown = [n for n in names if n not in PROFILES and n not in EXTENSIONS]
    if unknown or not any(n in PROFILES for n in names):
        raise UsageError(f"profile {'+'.join(names) or '(empty)'}: name at least one TOSA 1.0 profile "
                         f"({', '.join(PROFILES)}) and any extensions ({', '.join(EXTENSIONS)})"
                         + (f"; unknown: {', '.join(unknown)}" if unknown else ""))
    return tuple(n for n in names if n in PROFILES), tuple(n for n in names if n in EXTENSIONS)
