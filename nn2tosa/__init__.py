"""nn2tosa: Arm NN and ExecuTorch MPS graphs to TOSA 1.0.

    import nn2tosa
    result = nn2tosa.convert("model.armnn")            # or options=nn2tosa.ConvertOptions(semantics="cpuref")
    result.mlir_module()  /  result.mlir_text()  /  result.tosa_flatbuffer()  /  result.report
    nn2tosa.convert_many(["a.armnn", "b.pte"], "out", emit="tosa,mlirbc")   # -> [ModelResult, ...]
    nn2tosa.compare("model.armnn", ["x.npy"], reference="float")            # -> CompareResult, per layer

`load`, `convert`, `Result` (nn2tosa.api), `ConvertOptions` (nn2tosa.options) and `compare`
(nn2tosa.comparison) are imported on first use, so importing the package (and starting the command line)
loads neither numpy nor MLIR.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["load", "convert", "ConvertOptions", "convert_many", "ModelResult", "Result", "compare", "CompareResult", "__version__"]

if TYPE_CHECKING:
    from nn2tosa.api import Result, convert, load
    from nn2tosa.comparison import CompareResult, compare
    from nn2tosa.options import ConvertOptions
    from nn2tosa.zoo import ModelResult, convert_many


def __getattr__(name: str) -> Any:
    if name in ("load", "convert", "Result"):
        from nn2tosa import api

        return getattr(api, name)
    if name == "ConvertOptions":  # every per-model option, validated (nn2tosa/options.py)
        from nn2tosa.options import ConvertOptions

        return ConvertOptions
    if name in ("convert_many", "ModelResult"):  # many models into a directory (nn2tosa/zoo.py)
        from nn2tosa import zoo

        return getattr(zoo, name)
    if name in ("compare", "CompareResult"):  # layer by layer against a reference (nn2tosa/comparison/)
        from nn2tosa import comparison

        return getattr(comparison, name)
    raise AttributeError(f"module 'nn2tosa' has no attribute {name!r}")
