"""The `nn2tosa compare` command (its arguments and what it prints and writes).

    nn2tosa compare MODEL [--inputs a.npy ...] [--reference DIR|DUMP|float] [--tolerance T] [--sort]
                          [--json FILE] [--html FILE] [--list-tensors] [--partial [--host OP ...]]

Exit status: 0 when every compared tensor is within tolerance; 1 when one is not (the first in
graph order is marked as the first divergence), when none could be compared, or the converted graph
does not run validly; 2 for
bad arguments, inputs or references, or a missing tosa-tools; 3 for a model that does not convert.
"""
from __future__ import annotations

import argparse

from nn2tosa.diagnostics import UsageError


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("input", help="model file (.armnn, MPS payload, .pte, .tosa)")
    p.add_argument("--inputs", nargs="+", default=[], metavar="NPY", help="one .npy per model input, in order "
                   "(default: the reference's, when it holds them, or random arrays, see --seed)")
    p.add_argument("--reference", default="float", metavar="REF",
                   help="what to compare with: a directory of .npy files named by source tensor (--list-tensors), "
                        "an Arm NN debug dump (the JSON lines of OptimizerOptions m_Debug), or 'float' (default): "
                        "nn2tosa's float64 evaluation of the source graph, quantized tensors dequantized")
    p.add_argument("--tolerance", choices=("fp32", "fp16", "quantized", "mixed"),
                   help="how close each tensor must be (as check; default from the model's types)")
    p.add_argument("--sort", action="store_true", help="list the tensors worst first (default: graph order)")
    p.add_argument("--json", metavar="FILE", help="write the comparison as JSON to FILE")
    p.add_argument("--html", metavar="FILE", help="write a self-contained page (error plot, coloured graph) to FILE")
    p.add_argument("--list-tensors", action="store_true",
                   help="print the source tensors a reference directory may hold (NAME.npy per line) and exit")
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default 0)")
    p.add_argument("--partition", type=int, metavar="N", help="partition N of a multi-partition .pte")
    p.add_argument("--partial", action="store_true",
                   help="compare a partial conversion region by region (each region after a host op is fed the "
                        "reference's values of what it reads)")
    p.add_argument("--host", metavar="OP", action="append", default=[],
                   help="with --partial: leave this op type or layer/node name to the host (as convert --host)")


def cmd_compare(args: argparse.Namespace) -> int:
    from nn2tosa.fileio import check_output_path, write_atomic

    for out in (args.json, args.html):
        if out:
            check_output_path(out)
    if args.list_tensors:
        return _list_tensors(args)
    from nn2tosa.comparison.run import compare
    from nn2tosa.comparison.table import format_table

    result = compare(args.input, args.inputs or None, args.reference, tolerance=args.tolerance,
                     semantics=args.semantics, partition=args.partition, target=args.target, seed=args.seed,
                     partial=args.partial, host=args.host)
    print(format_table(result, sort=args.sort), end="")
    if args.json:
        from nn2tosa.comparison.table import to_json

        write_atomic(args.json, to_json(result).encode())
    if args.html:
        from nn2tosa.comparison.html import to_html

        write_atomic(args.html, to_html(result).encode())
    return 0 if result.ok else 1


def _list_tensors(args: argparse.Namespace) -> int:
    from nn2tosa.check import prepare
    from nn2tosa.comparison.points import source_points

    model = prepare(args.input, args.partition, semantics=args.semantics, target=args.target)
    statuses = {s.loc: s.status for s in model.result.report.source_ops if s.status != "constant"}
    points, _ = source_points(model.source, statuses)
    for p in points:
        print(f"{p.file_name}\t{'x'.join(map(str, p.type.shape)) or 'scalar'} {p.type.dtype}\t{p.op}")
    if not points:
        raise UsageError(f"{args.input} has no source tensors")
    return 0


__all__ = ["add_arguments", "cmd_compare"]
