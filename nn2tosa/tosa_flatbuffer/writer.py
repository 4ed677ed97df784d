"""The skeleton both `.tosa` writers share (nn2tosa.lowering: `flatbuffer_emitter` for TOSA 1.0,
`flatbuffer_0100` for the 0.100 draft): the builder sized once, tensors, operators, basic blocks,
regions, the version and the root table. The two schemas name these tables and fields alike, so
each function takes the flatc-generated module (`fb`) to write with; what differs (variable
tensors, shapes, locations, attribute tables) is an argument a writer leaves out when its layout
has none.
"""
from __future__ import annotations

from collections.abc import Sequence
from types import ModuleType

import flatbuffers
import numpy as np

from nn2tosa.diagnostics import Unsupported, UnsupportedError

from .common import FlatBuilder

BLOCK_NAME = "main"  # the function's region and block


def fits(size: int) -> bool:
    """Whether a flatbuffer of about `size` bytes is within the 2 GB its 32-bit offsets address."""
    return size < flatbuffers.Builder.MAX_BUFFER_SIZE


def new_builder(size: int, defer_data: bool, graph_name: str, too_big: str, external: bool = False) -> FlatBuilder:
    """A builder of `size` bytes (the writer's estimate of everything it writes; with `external`,
    of what stays in the flatbuffer), or UnsupportedError saying `too_big` when that is past what a
    flatbuffer can address."""
    if not fits(size):
        raise UnsupportedError([Unsupported("flatbuffer", graph_name, f"about {size} bytes: {too_big}")])
    return FlatBuilder(size, defer_data, external)


def tensor(builder: FlatBuilder, fb: ModuleType, name: str, shape: Sequence[int], dtype: int,
           data: np.ndarray | None = None, variable_name: str | None = None) -> int:
    """A TosaTensor: `data` its storage bytes (a constant, a variable's initial value), `variable_name`
    for a variable tensor (TOSA 1.0 only). Data the builder keeps outside the flatbuffer is addressed
    by the tensor's offset and size (TOSA 1.x only)."""
    external = data is not None and builder.keeps_outside(data)
    data_offset = builder.data_vector(data) if data is not None and not external else None
    shape_offset = builder.int32_vector(shape)
    name_offset = builder.string(name)
    variable_offset = None if variable_name is None else builder.string(variable_name)
    fb.TosaTensorStart(builder)
    fb.TosaTensorAddName(builder, name_offset)
    fb.TosaTensorAddShape(builder, shape_offset)
    fb.TosaTensorAddType(builder, dtype)
    if data_offset is not None:
        fb.TosaTensorAddData(builder, data_offset)
    if external:
        builder.external_data(fb.TosaTensorAddOffset, fb.TosaTensorAddSize, data)  # type: ignore[arg-type]
    if variable_offset is not None:
        fb.TosaTensorAddVariable(builder, True)
        fb.TosaTensorAddVariableName(builder, variable_offset)
    return fb.TosaTensorEnd(builder)


def operator(builder: FlatBuilder, fb: ModuleType, op: int, inputs: Sequence[str], outputs: Sequence[str],
             attribute: tuple[int, int] | None, location: str | None = None) -> int:
    """A TosaOperator reading and writing the tensors named; `attribute` is (union member, table
    offset), written before the operator (None: no attribute table); `location` the text of its
    OpLocation (TOSA 1.0 only)."""
    inputs_offset = builder.offsets_vector([builder.string(s) for s in inputs])
    outputs_offset = builder.offsets_vector([builder.string(s) for s in outputs])
    location_offset = None if location is None else builder.once(("location", location),
                                                                 lambda: _location(builder, fb, location))
    fb.TosaOperatorStart(builder)
    fb.TosaOperatorAddOp(builder, op)
    if attribute is not None:
        fb.TosaOperatorAddAttributeType(builder, attribute[0])
        fb.TosaOperatorAddAttribute(builder, attribute[1])
    fb.TosaOperatorAddInputs(builder, inputs_offset)
    fb.TosaOperatorAddOutputs(builder, outputs_offset)
    if location_offset is not None:
        fb.TosaOperatorAddLocation(builder, location_offset)
    return fb.TosaOperatorEnd(builder)


def _location(builder: FlatBuilder, fb: ModuleType, text: str) -> int:
    text_offset = builder.string(text)
    fb.OpLocationStart(builder)
    fb.OpLocationAddText(builder, text_offset)
    return fb.OpLocationEnd(builder)


def basic_block(builder: FlatBuilder, fb: ModuleType, name: str, operators: list[int], tensors: list[int],
                inputs: Sequence[str], outputs: Sequence[str], shapes: list[int] | None = None) -> int:
    """A TosaBasicBlock of the operators and tensors written, its inputs and outputs by name, and
    (TOSA 1.0) its TosaShapes."""
    name_offset = builder.string(name)
    operators_vec = builder.offsets_vector(operators)
    tensors_vec = builder.offsets_vector(tensors)
    inputs_vec = builder.offsets_vector([builder.string(s) for s in inputs])
    outputs_vec = builder.offsets_vector([builder.string(s) for s in outputs])
    shapes_vec = None if shapes is None else builder.offsets_vector(shapes)
    fb.TosaBasicBlockStart(builder)
    fb.TosaBasicBlockAddName(builder, name_offset)
    fb.TosaBasicBlockAddOperators(builder, operators_vec)
    fb.TosaBasicBlockAddTensors(builder, tensors_vec)
    fb.TosaBasicBlockAddInputs(builder, inputs_vec)
    fb.TosaBasicBlockAddOutputs(builder, outputs_vec)
    if shapes_vec is not None:
        fb.TosaBasicBlockAddShapes(builder, shapes_vec)
    return fb.TosaBasicBlockEnd(builder)


def region(builder: FlatBuilder, fb: ModuleType, name: str, block: int) -> int:
    """A TosaRegion holding one basic block."""
    name_offset = builder.string(name)
    blocks_vec = builder.offsets_vector([block])
    fb.TosaRegionStart(builder)
    fb.TosaRegionAddName(builder, name_offset)
    fb.TosaRegionAddBlocks(builder, blocks_vec)
    return fb.TosaRegionEnd(builder)


def finish(builder: FlatBuilder, fb: ModuleType, regions: list[int], version: tuple[int, int, int], draft: bool) -> None:
    """The TosaGraph root: the regions and the version, and the buffer finished with identifier TOSA."""
    regions_vec = builder.offsets_vector(regions)
    fb.VersionStart(builder)
    fb.VersionAdd_Major(builder, version[0])
    fb.VersionAdd_Minor(builder, version[1])
    fb.VersionAdd_Patch(builder, version[2])
    fb.VersionAdd_Draft(builder, draft)
    version_offset = fb.VersionEnd(builder)
    fb.TosaGraphStart(builder)
    fb.TosaGraphAddVersion(builder, version_offset)
    fb.TosaGraphAddRegions(builder, regions_vec)
    builder.Finish(fb.TosaGraphEnd(builder), file_identifier=b"TOSA")
    builder.place_external()


__all__ = ["BLOCK_NAME", "basic_block", "finish", "fits", "new_builder", "operator", "region", "tensor"]
