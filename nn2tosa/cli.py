"""The `nn2tosa` command line.

Exit codes: 0 success; 2 invalid or corrupt input (or a bad command line); 3 valid input with
constructs nn2tosa cannot convert (all listed); 1 anything else. Errors are one line,
`nn2tosa: error: ...`, unless --debug asks for the traceback. `convert --out-dir` (many models,
nn2tosa/zoo.py) exits with the worst class among its models: 1, then 2, then 3, then 0.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import traceback
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from nn2tosa.diagnostics import InvalidInputError, UsageError, error_exit


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # argparse's default exit code is 2 as well
        raise UsageError(message)


def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--debug", action="store_true", help="show the Python traceback of an error")
    _add_limits(p)


def _add_semantics(p: argparse.ArgumentParser) -> None:
    from nn2tosa.options import SEMANTICS

    p.add_argument("--semantics", choices=SEMANTICS, default=SEMANTICS[0],
                   help="whose integers a quantized model computes: litert (TFLite's integer kernels, what the model "
                        "was quantized for; default) or cpuref (Arm NN CpuRef's float32 emulation of them)")
    from nn2tosa.lowering.npu_target import NPU_TARGETS

    p.add_argument("--target", choices=tuple(NPU_TARGETS), default=None,
                   help="convert for Arm's Vela and that Ethos-U NPU: the lowering forms Vela maps there, and the "
                        "profile it reads (pro_int+int16+int4+doubleround unless --profile); see docs/vela.md")


def _add_limits(p: argparse.ArgumentParser) -> None:
    """One option per resource limit (nn2tosa.limits.Limits), defaulting to its default."""
    from dataclasses import fields

    from nn2tosa.limits import Limits, parse_size

    group = p.add_argument_group("resource limits (input asking for more is refused with exit 2)")
    for f in fields(Limits):
        is_bytes = f.name.endswith("_bytes")
        group.add_argument(f.metadata["flag"], dest=f.name, type=_nonnegative(parse_size if is_bytes else int),
                           default=f.default, metavar="BYTES" if is_bytes else "N",
                           help=f"{f.metadata['help']} (default {f.default})")


def _nonnegative(convert: Any) -> Any:
    def parse(text: str) -> int:
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a non-negative number") from None
        if value < 0:
            raise argparse.ArgumentTypeError(f"{text!r} is negative")
        return value

    return parse


def _add_program_options(p: argparse.ArgumentParser, *, state: bool = False, steps: bool = False) -> None:
    """Options for whole ExecuTorch programs (.pte) with mutable buffers (docs/frontend_mps.md)."""
    if state:
        from nn2tosa.options import STATE_FORMS

        p.add_argument("--state", choices=STATE_FORMS, default=STATE_FORMS[0],
                       help="a program's mutable buffers (a KV cache): TOSA variables (default), or io: extra "
                            "inputs and outputs named after each buffer, for runtimes without variables")
    if steps:
        p.add_argument("--steps", type=int, metavar="S",
                       help="call a stateful program S times, its buffers carried from call to call (starting at "
                            "zero): --inputs (and --expected) then hold every step's arrays, step after step")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="nn2tosa", description="Convert Arm NN and ExecuTorch MPS graphs to TOSA 1.0.")
    from nn2tosa import __version__

    parser.add_argument("--version", action="version", version=f"nn2tosa {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    p = sub.add_parser("convert", help="convert a model to TOSA MLIR (.mlir, .mlirbc) and/or a .tosa flatbuffer; "
                                       "several models into a directory with --out-dir")
    p.add_argument("input", nargs="+", help="model file: .armnn, MPS payload (.mpsgraph), .pte, or .tosa; several "
                                            "with --out-dir")
    p.add_argument("-o", "--output", action="append", metavar="OUT",
                   help="output file; the extension picks the kind (.mlir, .mlirbc, .tosa); '-' writes MLIR text "
                        "to stdout; may be repeated")
    from nn2tosa.zoo import add_zoo_arguments

    add_zoo_arguments(p)
    p.add_argument("--partition", type=int, metavar="N", help="convert only partition N of a multi-partition .pte")
    _add_program_options(p, state=True)
    p.add_argument("--elide-constants", action="store_true", help="elide large constants in MLIR text output")
    p.add_argument("--mlir-pretty", action="store_true",
                   help="MLIR text in the pretty form (default: the generic form, which every MLIR version parses)")
    p.add_argument("--report", action="store_true",
                   help="print the conversion report to stderr: what each source layer/node became, what was "
                        "folded or fused, the TOSA profiles/extensions/level needed (and why), constant bytes, "
                        "boundary dtype changes, time per stage")
    p.add_argument("--report-json", metavar="FILE", help="write the conversion report as JSON to FILE")
    p.add_argument("--profile", metavar="P",
                   help="the TOSA 1.0 target to convert for, e.g. pro_int, pro_fp, pro_int+int16: a model needing "
                        "more is exit 3 naming the ops; the output's tosa.target_env is this target")
    p.add_argument("--partial", action="store_true",
                   help="convert the TOSA-expressible regions around unsupported layers: one TOSA function per "
                        "region, and a JSON sidecar (--sidecar) telling a runtime how to stitch them")
    p.add_argument("--host", metavar="OP", action="append", default=[],
                   help="with --partial: leave this op to the host even though it converts (an op type such as "
                        "DetectionPostProcess, or a layer/node name; repeatable)")
    p.add_argument("--vela-report", action="store_true",
                   help="with --target (Vela installed: pip install nn2tosa[vela]): compile every NPU region with Vela "
                        "and print its cycles, SRAM and DRAM use and the operators placed, beside the ops left to the "
                        "host (stderr; with --partial also in the sidecar)")
    p.add_argument("--sidecar", metavar="FILE",
                   help="with --partial: where the JSON sidecar goes (default: the first output's name with "
                        "the extension .partition.json)")
    p.add_argument("--mlir-pipeline", metavar="PIPELINE",
                   help="run this MLIR pass pipeline, e.g. 'builtin.module(tosa-to-linalg-pipeline)', on the module "
                        "before writing MLIR outputs (.tosa outputs are written from the TOSA module as converted)")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="progress bar on stderr (default: only for a large model on a terminal)")
    from nn2tosa.options import TOSA_VERSIONS

    p.add_argument("--tosa-version", choices=TOSA_VERSIONS, default=TOSA_VERSIONS[0],
                   help=".tosa layout: 1.0 (default), or 0.100-draft, the older generation with TOSA 0.90 "
                        "semantics (zero points and shapes as attributes); what 0.90 cannot express is refused")
    p.add_argument("--external-data", action="store_true",
                   help=".tosa (1.0): keep every tensor's data of 64 KiB or more after the flatbuffer, addressed by "
                        "its offset/size, as files past 2 GB must (those always are)")
    p.add_argument("--keep-int4", action="store_true",
                   help="keep int4 weights (MPS group-quantized linear layers) as int4 (TOSA EXT-INT4) instead of "
                        "float weights; where TOSA 1.0 cannot, the conversion stops and says why")
    p.add_argument("--validate", action="store_true",
                   help="run MLIR's tosa-attach-target + tosa-validate (strict) for that target on the output")
    _add_semantics(p)
    _add_common(p)

    p = sub.add_parser("opt", help="run IR passes on IR text (for testing passes)")
    p.add_argument("input", nargs="?", help="IR text file (MLIR generic syntax), or '-' for stdin")
    p.add_argument("--passes", default="", help="comma-separated pass pipeline, e.g. dce,fold")
    p.add_argument("-o", "--output", default="-", help="output IR text file (default stdout)")
    p.add_argument("--print-ir-after-all", action="store_true", help="print the IR to stderr after every pass")
    p.add_argument("--print-ir-after", action="append", default=[], metavar="PASS",
                   help="print the IR to stderr after PASS (may be repeated)")
    p.add_argument("--verify-each", action=argparse.BooleanOptionalAction, default=True,
                   help="verify the IR after each pass (default on)")
    p.add_argument("--timing", action="store_true", help="report the time each pass took on stderr")
    p.add_argument("--elide-constants", action="store_true", help="elide large constants in the output")
    p.add_argument("--list-passes", action="store_true", help="list the available passes and exit")
    _add_semantics(p)
    _add_common(p)

    p = sub.add_parser("inspect", help="describe a model: format, version, op histogram, inputs and outputs")
    p.add_argument("input", help="model file")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--ir", action="store_true", help="print the source-level IR as MLIR text")
    p.add_argument("--elide-constants", action="store_true", help="with --ir: elide large constants")
    _add_common(p)

    # check, run (nn2tosa/check.py) and graph (nn2tosa/graphviz.py): their code is imported when they run
    p = sub.add_parser("check", help="convert, run on the TOSA reference model and compare with expected outputs "
                                     "(random inputs and a validity check when none are given)")
    p.add_argument("input", help="model file (.armnn, MPS payload, .pte, .tosa)")
    p.add_argument("--inputs", nargs="+", default=[], metavar="NPY", help="one .npy per model input, in order "
                   "(default: random arrays of the right shapes and types, see --seed)")
    p.add_argument("--expected", nargs="+", default=[], metavar="NPY",
                   help="one .npy per model output, in order; without them only TOSA validity is checked")
    p.add_argument("--tolerance", choices=("fp32", "fp16", "quantized", "mixed"),
                   help="how close outputs must be (default: from the model's types; see docs/api.md)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default 0)")
    p.add_argument("--partition", type=int, metavar="N", help="partition N of a multi-partition .pte")
    _add_program_options(p, steps=True)
    _add_semantics(p)
    _add_common(p)

    p = sub.add_parser("run", help="run a .tosa (or a converted model) on the TOSA reference model, write .npy outputs")
    p.add_argument("input", help="model file: a .tosa runs as it is, other models are converted first")
    p.add_argument("--inputs", nargs="+", default=[], metavar="NPY", help="one .npy per model input, in order")
    p.add_argument("-o", "--output", required=True, metavar="DIR",
                   help="directory for the outputs, written as output0.npy, output1.npy, ... in model order "
                        "(stepS.outputK.npy with --steps)")
    p.add_argument("--partition", type=int, metavar="N", help="partition N of a multi-partition .pte")
    _add_program_options(p, steps=True)
    _add_semantics(p)
    _add_common(p)

    # compare (nn2tosa/comparison/): layer by layer against a reference
    from nn2tosa.comparison.command import add_arguments as add_compare_arguments

    p = sub.add_parser("compare", help="convert, run on the TOSA reference model keeping every intermediate, and "
                                       "compare each source layer's output with a reference (float, .npy, Arm NN dump)")
    add_compare_arguments(p)
    _add_semantics(p)
    _add_common(p)

    p = sub.add_parser("graph", help="draw the IR at one stage (source, nn, tosa) as .dot, or .svg/.png/.pdf "
                                     "through Graphviz")
    p.add_argument("input", help="model file (.armnn, MPS payload, .pte, .tosa)")
    p.add_argument("--stage", choices=("source", "nn", "tosa"), default="tosa",
                   help="source: as read; nn: legalized and canonicalized; tosa: converted (default)")
    p.add_argument("-o", "--output", required=True, metavar="OUT",
                   help="g.dot (or .gv; '-' for stdout), or g.svg / g.png / g.pdf through Graphviz's dot")
    p.add_argument("--partition", type=int, metavar="N", help="only partition N of a multi-partition .pte")
    _add_common(p)
    return parser


# ------------------------------------------------------------------------------ commands
def _load(path: str, data: bytes | None = None, partitions: bool = False) -> list:
    """The graphs of model `path`; from `data` when given (its bytes, sent from elsewhere: `path` still names
    it). `partitions`: a .pte's MPS delegates one by one instead of the whole program."""
    from nn2tosa.frontend import load

    return load(path if data is None else data, name=None if data is None else path, partitions=partitions)


def cmd_convert(args: argparse.Namespace) -> int:
    from nn2tosa.zoo import cmd_convert_many, refuse_zoo_options

    if args.out_dir is not None:  # many models, each into the directory (nn2tosa/zoo.py)
        return cmd_convert_many(args)
    refuse_zoo_options(args)
    if args.output is None:
        raise UsageError("the following arguments are required: -o/--output (or --out-dir DIR for several models)")
    if len(args.input) != 1:
        raise UsageError(f"{len(args.input)} inputs: several models go into a directory (--out-dir DIR)")
    from nn2tosa.api import check_outputs, convert_file
    from nn2tosa.options import ConvertOptions

    options = ConvertOptions.from_arguments(args)
    kinds, sidecar = check_outputs(args.output, options, sidecar=args.sidecar, report_json=args.report_json)
    done = convert_file(args.input[0], list(zip(args.output, kinds)), options, sidecar=sidecar,
                        report_json=args.report_json, partition=args.partition, progress=args.progress)
    results = done.results
    if args.report:
        for i, result in enumerate(results):
            head = f"partition {i}: " if len(results) > 1 else ""
            sys.stderr.write(head + result.report.format_text())
    if done.vela:
        from nn2tosa.vela_support import format_vela_report

        for i, account in enumerate(done.vela):
            sys.stderr.write((f"partition {i}: " if len(results) > 1 else "") + format_vela_report(account))
    return 0


def cmd_opt(args: argparse.Namespace) -> int:
    from nn2tosa.passes import PassManager, available_passes
    from nn2tosa.passes.context import PassContext

    if args.list_passes:
        for name, info in available_passes().items():
            print(f"{name:24} {info.doc}")
        return 0
    if args.input is None:
        raise UsageError("opt: the following arguments are required: input (or --list-passes)")
    import nn2tosa.frontend  # noqa: F401  (the source formats' dialects, which IR text may hold)
    from nn2tosa.fileio import check_output_path, write_atomic
    from nn2tosa.ir.text import ParseError, parse_ir, print_ir

    check_output_path(args.output)

    name = "<stdin>" if args.input == "-" else args.input
    try:
        text = sys.stdin.read() if args.input == "-" else Path(args.input).read_text()
    except OSError as e:
        raise InvalidInputError(e.strerror or str(e), file=name) from None
    except UnicodeDecodeError:
        raise InvalidInputError("not UTF-8 text", file=name) from None
    try:
        graphs = parse_ir(text)
    except ParseError as e:
        raise InvalidInputError(str(e), file=name) from None
    except ValueError as e:
        raise InvalidInputError(f"not nn2tosa IR: {e}", file=name) from None
    if args.verify_each:  # the input must verify too, or the first pass would hide what was wrong
        from nn2tosa.ir import VerificationError, verify

        for g in graphs:
            try:
                verify(g)
            except VerificationError as e:
                raise InvalidInputError(f"the IR does not verify: {'; '.join(e.problems)}", file=name) from None
    pm = PassManager.from_names(
        args.passes,
        verify_each=args.verify_each,
        print_ir_after_all=args.print_ir_after_all,
        print_ir_after=frozenset(args.print_ir_after),
        timing=args.timing,
        context=PassContext(args.semantics, args.target),  # what legalization and lower-to-tosa consult
    )
    for g in graphs:
        pm.run(g)
    write_atomic(args.output, print_ir(graphs, elide_constants=args.elide_constants).encode())
    return 0


def describe(graphs: list) -> dict[str, Any]:
    """What `inspect --json` prints: format, version, op histogram, inputs, outputs."""

    def tensor(name: str, t: Any) -> dict[str, Any]:
        d: dict[str, Any] = {"name": name, "shape": list(t.shape), "dtype": t.dtype}
        if t.quant is not None:
            q = t.quant
            d["quantization"] = {"scales": list(q.scales), "zero_points": list(q.zero_points), "axis": q.axis}
        return d

    def one(g: Any) -> dict[str, Any]:
        return {
            "name": g.name,
            "ops": g.histogram(),
            "inputs": [tensor(g.input_name(n), g.types(n)[0]) for n in g.inputs],
            "outputs": [tensor(o.name, g.type_of(o.value)) for o in g.outputs],
        }

    metas = [{k: v for k, v in g.meta.items() if isinstance(v, (str, int, float, bool))} for g in graphs]
    if len(graphs) == 1:
        return {**metas[0], **one(graphs[0]), **_program(graphs[0])}
    # several partitions: the facts they share at the top, each partition's own facts in its entry; a
    # graph that a control-flow op runs (a .tosa's COND_IF / WHILE_LOOP branch) is marked, and its block
    # arguments are not inputs of the file
    from nn2tosa.lowering.program import named_graphs

    branches = {name for g in graphs for _, _, name in named_graphs(g)}
    info: dict[str, Any] = {k: v for k, v in metas[0].items() if all(m.get(k) == v for m in metas[1:])}
    parts = [{**{k: v for k, v in m.items() if k not in info}, **one(g)} for m, g in zip(metas, graphs)]
    for part in parts:
        if part["name"] in branches:
            part["branch"] = True
    total: dict[str, int] = {}
    for p in parts:
        for op, n in p["ops"].items():
            total[op] = total.get(op, 0) + n
    info.update(
        ops=dict(sorted(total.items())),
        inputs=[dict(t, partition=i) for i, p in enumerate(parts) if "branch" not in p for t in p["inputs"]],
        outputs=[dict(t, partition=i) for i, p in enumerate(parts) if "branch" not in p for t in p["outputs"]],
        partitions=parts,
    )
    return info


def _program(g: Any) -> dict[str, Any]:
    """A whole ExecuTorch program's plan in order and its buffers (frontend/mps/program.py), if `g` is one."""
    if "plan_steps" not in g.meta:
        return {}
    buffers = [{**b, "mutated": True} for b in g.meta.get("state", [])]
    return {"plan_steps": g.meta["plan_steps"], "buffers": buffers}


def _print_program(info: dict[str, Any]) -> None:
    print(f"plan {info.get('plan', '?')!r}, in order:")
    for step in info["plan_steps"]:
        k = step["instruction"]
        if step["kind"] == "delegate":
            print(f"  {k:3d} delegate {step['delegate']}: {step['nodes']} MPS nodes, reads "
                  f"{', '.join(f'%{v}' for v in step['inputs']) or 'nothing'}, writes "
                  f"{', '.join(f'%{v}' for v in step['outputs'])}")
        else:
            print(f"  {k:3d} {step['operator']}({', '.join(step['arguments'])}) writes "
                  f"{', '.join(f'%{v}' for v in step['outputs']) or 'nothing'}")
    print("buffers:" + ("" if info["buffers"] else " none"))
    for b in info["buffers"]:
        print(f"  {b['name']}: {'x'.join(map(str, b['shape'])) or 'scalar'} {b['dtype']} (value %{b['value']}), "
              f"mutated, initial {b['initial']}")


def cmd_inspect(args: argparse.Namespace) -> int:
    graphs = _load(args.input)
    if args.ir:
        from nn2tosa.ir.text import print_ir

        sys.stdout.write(print_ir(graphs, elide_constants=args.elide_constants))
        return 0
    info = describe(graphs)
    if args.json:
        print(json.dumps(info, indent=1))
        return 0
    print(f"{args.input}: {info.get('format', '?')}" + (f" ({info['version']})" if "version" in info else ""))
    for key in ("inputs", "outputs"):
        print(f"{key}:")
        for t in info[key]:
            q = t.get("quantization")
            qs = f" scale={q['scales'][0] if q['axis'] is None else q['scales']} zp={q['zero_points'][0] if q['axis'] is None else q['zero_points']}" if q else ""
            name = f"{info['partitions'][t['partition']]['name']}.{t['name']}" if "partition" in t else t["name"]
            print(f"  {name}: {'x'.join(map(str, t['shape'])) or 'scalar'} {t['dtype']}{qs}")
    if "plan_steps" in info:
        _print_program(info)
    print("ops:")
    for op, n in info["ops"].items():
        print(f"  {n:6d} {op}")
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    from nn2tosa.check import cmd_check as run_check

    return run_check(args)


def cmd_run(args: argparse.Namespace) -> int:
    from nn2tosa.check import cmd_run as run_model

    return run_model(args)


def cmd_graph(args: argparse.Namespace) -> int:
    from nn2tosa.graphviz import cmd_graph as draw

    return draw(args)


def cmd_compare(args: argparse.Namespace) -> int:
    from nn2tosa.comparison.command import cmd_compare as compare_layers

    return compare_layers(args)


COMMANDS = {"convert": cmd_convert, "opt": cmd_opt, "inspect": cmd_inspect, "check": cmd_check, "run": cmd_run,
            "graph": cmd_graph, "compare": cmd_compare}


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    if not argv:  # as git does: the usage and the commands, then the one-line error
        build_parser().print_help()
        print("nn2tosa: error: no command given", file=sys.stderr)
        return 2
    try:
        args = build_parser().parse_args(argv)
        from nn2tosa.limits import using
        from nn2tosa.options import limits_from_arguments

        with using(limits_from_arguments(args)), warnings.catch_warnings():
            if not debug:  # numpy's overflow/invalid-value warnings on hostile data would break the one line
                warnings.simplefilter("ignore")
            return COMMANDS[args.command](args)
    except KeyboardInterrupt:
        print("nn2tosa: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `nn2tosa convert m -o - | head`: the reader left; quiet, as SIGPIPE would end a C tool
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # the exit-time flush must not fail again
        except (OSError, ValueError):
            pass
        return 128 + signal.SIGPIPE
    except Exception as e:
        if debug:
            traceback.print_exc()
        code, message = error_exit(e)
        print(f"nn2tosa: error: {message}", file=sys.stderr)
        return code


def run() -> None:
    """The console script and `python -m nn2tosa`: main(), then exit without Python's finalization.

    Tearing down a conversion's objects (the MLIR context and module, the graph, numpy's views of the
    mapped input) costs ~0.1 s of CPU at exit, a fifth of a small model's whole run, for memory the
    kernel reclaims anyway. Outputs are written and closed before main() returns; stdout and stderr
    are flushed here (if that fails, the ordinary exit reports it as before)."""
    code = main()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:
        raise SystemExit(code) from None
    os._exit(code)
