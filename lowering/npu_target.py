"""Ethos-U presets (`--target ethos-u55|ethos-u65|ethos-u85`): the TOSA target and lowering forms Arm's
Vela compiles for each NPU generation.

Vela (docs/vela.md) reads TOSA 1.0 PRO-INT with EXT-INT16, EXT-INT4 and EXT-DOUBLEROUND, and has no
CPU fallback for TOSA input: one operator it cannot map on the chosen NPU fails the file. Most
integer lowerings use only operators every Ethos-U maps (TABLE, RESCALE, MUL, ADD, MINIMUM/MAXIMUM,
shifts, CLZ, the pools and convolutions). Where one form suits U85 and another U55/U65, or Vela
runs a form in fewer cycles than the one other TOSA consumers handle best, the rule asks
`choose(ctx, PATTERN)`: without a preset it takes the form every TOSA consumer handles best (the
fewest TOSA operators), under a preset the one that preset names. The preset travels in the passes'
context like the semantics (nn2tosa.passes.context.PassContext.target), and every choice made is listed in
`convert --report`.

A preset also fixes the profile: a model needing more than PRO-INT with those extensions (float
layers, which Vela does not map) is UnsupportedError naming the layers, instead of a file Vela rejects.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # (the command line reads NPU_TARGETS for its --help: the IR, numpy and networkx stay unloaded)
    from .context import LoweringContext

# pattern -> {form: why that form}; the first form is the default without a preset
PATTERNS: dict[str, dict[str, str]] = {
    "resize_bilinear_integer_upscale": {
        "resize": "one RESIZE (Vela maps it on Ethos-U85: fewer cycles there than the transposed convolution)",
        "depthwise_conv2d": "the input spread by the factor, then a DEPTHWISE_CONV2D of triangle weights and one "
                            "rounding RESCALE (Vela maps no RESIZE of this kind on Ethos-U55 and U65: "
                            "q8_resize_bilinear_align 6,871 -> 2,427 cycles on U55 against the TRANSPOSE_CONV2D of "
                            "triangle weights)",
        "double_round_resize": "one RESIZE of every scale term doubled and one RESCALE by a power of two with "
                               "DOUBLE_ROUND, whose sign-dependent rounding term is TFLite's half away from zero "
                               "(Vela fuses the RESCALE into the RESIZE on Ethos-U85: q8_resize_bilinear_align "
                               "3,169 -> 770 cycles, where the shifts and add of half-up rounding ran alone)",
    },
    "transpose_conv": {
        "transpose_conv2d": "one TRANSPOSE_CONV2D and its RESCALE",
        "upsample_then_conv2d": "the input spread by the stride (a TRANSPOSE_CONV2D of identity 1x1 weights), then "
                                "a stride-1 CONV2D of the flipped kernel (Vela fuses no requantizing RESCALE into a "
                                "TRANSPOSE_CONV2D, it fuses it into a CONV2D: q8_transpose_conv 67,712 -> 2,689 "
                                "cycles on Ethos-U55, 18,216 -> 5,300 on U85)",
        "phase_conv2d": "one stride-1 CONV2D of the input itself per row phase, the column phases as its output "
                        "channels, side by side in a CONCAT along the width (no spread input: Vela writes each "
                        "CONV2D into the CONCAT and fuses its RESCALE: q8_transpose_conv 2,689 -> 1,280 cycles on "
                        "Ethos-U55, 5,300 -> 3,303 on U85), or the spread form where the phases do not tile the "
                        "output exactly",
    },
    "int16_spatial_sum": {
        "reduce_sum": "a widening RESCALE and a REDUCE_SUM per axis (Vela on Ethos-U55 and U65: q16_mean_hw 526 "
                      "cycles against 811 for the window op)",
        "depthwise_conv2d": "one DEPTHWISE_CONV2D of ones summing in i48 and a RESCALE by 1 to i32 (Vela on "
                            "Ethos-U85 runs REDUCE_SUM over H and W through transposes: q16_mean_hw 2,003 -> 1,621 "
                            "cycles)",
    },
    "strided_slice_spatial": {
        "reshape_slice": "a RESHAPE splitting each strided axis into (count, stride) and a SLICE keeping index 0",
        "depthwise_conv2d": "one DEPTHWISE_CONV2D of weight 1 with the strides, and a RESCALE by 1 (Vela reads the "
                            "rows and columns strided in one op where the RESHAPE + SLICE form copies per axis)",
        "max_pool2d": "one MAX_POOL2D of 1x1 windows with the strides: the stored integers, no RESCALE (Vela on "
                      "Ethos-U85 runs it faster than the DEPTHWISE_CONV2D: q8_strided_slice_pad 3,886 -> 3,867 "
                      "cycles, slower on U55: 2,340 -> 2,377)",
    },
    "strided_pointwise_conv_untiled": {
        "widened_kernel": "one CONV2D whose kernel gains taps of weight zero point where the stride does not tile "
                          "the width (no slice of the input's width)",
        "subsample_first": "a DEPTHWISE_CONV2D of one-hot weights subsamples the input once, shared by every 1x1 "
                           "convolution reading it, then stride-1 CONV2Ds (Vela keeps both in its brick layout and "
                           "the convolutions read a quarter of the input: ResNet-50 -3.6 M cycles on Ethos-U85)",
    },
    "prelu_branch": {
        "select": "GREATER_EQUAL + SELECT of the two encoded branches (one TOSA operator choosing)",
        "sign_arithmetic": "the negative branch's difference added where x - zp < 0, through its sign bit "
                           "(ARITHMETIC_RIGHT_SHIFT, MUL, SUB: Vela maps no SELECT or comparison on Ethos-U55 and "
                           "U65)",
    },
    "lstm_activation": {
        "gather": "a 65536-entry GATHER of gemmlowp's int16 logistic / tanh (one TOSA operator)",
        "fixed_point": "gemmlowp's fixed-point steps in i32 arithmetic (Vela maps no GATHER on Ethos-U55 and U65)",
    },
    "lstm_layer_norm": {
        "direct": "the row's sum of squares as an i48 MATMUL, v mod 2**k as BITWISE_AND, the variance-1 case by "
                  "EQUAL + SELECT",
        "arithmetic": "the same integers from shifts, i32 sums and multiplications by 0 or 1 (Vela maps no int16 "
                      "MATMUL, BITWISE_AND, EQUAL or SELECT on Ethos-U55 and U65)",
    },
}


@dataclass(frozen=True)
class NpuTarget:
    name: str
    profile: str  # what `convert(profile=...)` checks the graph against
    forms: dict[str, str] = field(default_factory=dict)  # pattern -> form (others: the default)


_VELA_PROFILE = "pro_int+int16+int4+doubleround"
_EVERY_NPU = {"strided_pointwise_conv_untiled": "subsample_first", "transpose_conv": "phase_conv2d",
              "strided_slice_spatial": "depthwise_conv2d"}
_SMALL_NPU = {**_EVERY_NPU, "resize_bilinear_integer_upscale": "depthwise_conv2d", "prelu_branch": "sign_arithmetic",
              "lstm_activation": "fixed_point", "lstm_layer_norm": "arithmetic"}
NPU_TARGETS: dict[str, NpuTarget] = {
    "ethos-u55": NpuTarget("ethos-u55", _VELA_PROFILE, _SMALL_NPU),
    "ethos-u65": NpuTarget("ethos-u65", _VELA_PROFILE, _SMALL_NPU),
    "ethos-u85": NpuTarget("ethos-u85", _VELA_PROFILE, {**_EVERY_NPU, "int16_spatial_sum": "depthwise_conv2d",
                                                          "resize_bilinear_integer_upscale": "double_round_resize",
                                                          "strided_slice_spatial": "max_pool2d"}),
}


def npu_target(name: str | None) -> NpuTarget | None:
    """The preset called `name` (None: no preset); an unknown name is ValueError listing the presets."""
    if name is None:
        return None
    if name not in NPU_TARGETS:
        raise ValueError(f"target {name!r}: one of {', '.join(NPU_TARGETS)}")
    return NPU_TARGETS[name]


def choose(ctx: LoweringContext, pattern: str) -> str:
    """The form of `pattern` (a key of PATTERNS) for the graph's preset, recorded with why for the report."""
    from nn2tosa.passes.context import pass_context

    forms = PATTERNS[pattern]
    preset = npu_target(pass_context().target)
    form = preset.forms.get(pattern, next(iter(forms))) if preset else next(iter(forms))
    why = forms[form]
    choice = f"{pattern} -> {form} ({preset.name if preset else 'no --target'}: {why})"
    if choice not in ctx.npu_choices:  # once per layer, however often its rule asks
        ctx.npu_choices.append(choice)
    return form
