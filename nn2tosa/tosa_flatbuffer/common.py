"""What the two .tosa writers share (nn2tosa.lowering: `flatbuffer_emitter` for TOSA 1.0, `flatbuffer_0100`
for the seed's 0.100-draft layout): constant data in its flatbuffer encoding, a Builder that sizes its
buffer once and splices large tensor data in while writing, unique tensor names (the MLIR emitter's
too), and small helpers."""
from __future__ import annotations

import mmap
import struct
from collections.abc import Callable, Iterable
from typing import Any

import flatbuffers
import numpy as np

from nn2tosa.diagnostics import Unsupported, UnsupportedError
from nn2tosa.ir import Graph, TensorType
from nn2tosa.ir.types import beyond_type

DATA_ALIGNMENT = 8  # TosaTensor.data / TosaShape.data / clamp bounds: (force_align: 8), padded to 8 bytes
# Tensor data kept after the flatbuffer (TosaTensor.offset/size, files past 2 GB): each tensor starts at a
# multiple of this from the start of the file, so a reader mapping the file gets cache-line and SIMD
# aligned arrays whatever the element type.
EXTERNAL_ALIGNMENT = 64


# ------------------------------------------------------------------------------ raw data
def storage_bytes(array: np.ndarray, element_type: str) -> np.ndarray:
    """The flatbuffer encoding of a constant, as a 1-D uint8 array: a view of `array` where the
    encoding is the numpy storage itself, else one vectorised conversion (i4, i48, bool). Values
    beyond i4 or i48 (stored in int8 / int64) are refused: cutting their high bits would write others."""
    beyond = beyond_type(array, element_type)
    if beyond:
        raise ValueError(f"a constant {beyond}")
    if element_type == "i4":  # two per byte, element 2i in the low nibble
        nibbles = np.ascontiguousarray(array).reshape(-1).view(np.uint8) & 0x0F
        if nibbles.size % 2:
            nibbles = np.append(nibbles, np.uint8(0))
        return nibbles[0::2] | (nibbles[1::2] << 4)
    if element_type == "i48":  # the low six bytes of each little-endian int64
        return np.ascontiguousarray(np.ascontiguousarray(array, dtype="<i8").view(np.uint8).reshape(-1, 8)[:, :6]).reshape(-1)
    if element_type == "i1":
        array = array.astype(np.uint8, copy=False)
    array = np.ascontiguousarray(array)
    if array.dtype.byteorder == ">":
        array = array.astype(array.dtype.newbyteorder("<"))
    return array.reshape(-1).view(np.uint8)


def utf8_vector(text: str) -> np.ndarray:
    """An IR string in a [ubyte] field, as its UTF-8 (CUSTOM's implementation_attrs, in both layouts)."""
    return np.frombuffer(text.encode(), dtype=np.uint8)


def utf8_text(raw: np.ndarray | None) -> str:
    """The IR string of a [ubyte] field `utf8_vector` wrote ("" when absent); UnicodeDecodeError when
    the bytes are not UTF-8."""
    return "" if raw is None else raw.tobytes().decode("utf-8")


def padded_size(n: int, alignment: int = DATA_ALIGNMENT) -> int:
    return -(-n // alignment) * alignment


class FlatBuilder(flatbuffers.Builder):
    """A flatbuffers Builder whose buffer is an anonymous mmap of the final size, allocated once:
    no zero-filling pass, and pages never written cost no memory. With `defer_data`, large tensor
    data is not copied into the buffer at all: its place is reserved and `write_to` splices the
    numpy bytes in while writing the file (one copy, the kernel's). With `external`, tensor data of
    DEFER_BYTES or more is not in the flatbuffer at all but after it (`external_data`): what a file
    past the 2 GB a flatbuffer can address needs."""

    DEFER_BYTES = 1 << 16

    def __init__(self, size: int, defer_data: bool, external: bool = False):
        super().__init__(0)
        self.Bytes = mmap.mmap(-1, max(size, 1))  # type: ignore[assignment]
        self.head = len(self.Bytes)
        self.deferred: list[tuple[int, np.ndarray]] | None = [] if defer_data else None
        self.written: dict[Any, int] = {}  # content -> offset of an identical object already written
        # (offset field's distance from the end of the buffer, offset in the data section, the bytes)
        self.external: list[tuple[int, int, np.ndarray]] | None = [] if external else None
        self.external_size = 0  # bytes of the data section so far (aligned)
        self.external_base = 0  # where the data section starts in the file, once finished

    def keeps_outside(self, raw: np.ndarray) -> bool:
        """Whether tensor data `raw` goes after the flatbuffer rather than into its `data` vector."""
        return self.external is not None and raw.size >= self.DEFER_BYTES

    def external_data(self, add_offset: Callable[[Any, int], None], add_size: Callable[[Any, int], None],
                      raw: np.ndarray) -> None:
        """Fill the open table's offset and size fields for `raw`, kept in the data section after the
        flatbuffer. The offset is from the start of the file, which is only known once the buffer is
        finished: a placeholder (> 1, so the field is written) is patched by `place_external`."""
        assert self.external is not None
        start = self.external_size
        self.external_size = padded_size(start + raw.size, EXTERNAL_ALIGNMENT)
        add_offset(self, EXTERNAL_ALIGNMENT)
        self.external.append((self.Offset(), start, raw))  # the field just written is at the head
        add_size(self, raw.size)

    def place_external(self) -> None:
        """After Finish: the data section starts at the first aligned byte after the flatbuffer; write
        every external tensor's absolute offset into its field."""
        if not self.external:
            return
        self.external_base = padded_size(len(self.Bytes) - self.Head(), EXTERNAL_ALIGNMENT)
        for from_end, start, _ in self.external:
            struct.pack_into("<Q", self.Bytes, len(self.Bytes) - from_end, self.external_base + start)

    def once(self, key: Any, make: Callable[[], int]) -> int:
        """The offset of the object `make` writes, written only the first time `key` is asked for:
        names, shapes and attribute tables repeat across a model, and flatbuffers may share them."""
        offset = self.written.get(key)
        if offset is None:
            offset = self.written[key] = make()
        return offset

    def string(self, text: str) -> int:
        return self.once(("string", text), lambda: self.CreateString(text))

    def int32_vector(self, values: Iterable[int]) -> int:
        values = tuple(int(v) for v in values)
        if any(not -(1 << 31) <= v < 1 << 31 for v in values):  # MLIR's i64 attributes hold more than .tosa's int32
            raise UnsupportedError([Unsupported("attribute", "TOSA flatbuffer", f"{list(values)[:8]} does not fit int32")])
        return self.once(("int32s", values), lambda: self.CreateNumpyVector(np.asarray(values, dtype="<i4")))

    def offsets_vector(self, offsets: list[int]) -> int:
        """A vector of table/string offsets, written as one block (PrependUOffsetTRelative per
        element, as the library does, costs a dozen Python calls each)."""
        n = len(offsets)
        self.StartVector(4, n, 4)  # aligns for n uint32s; element j is then stored relative to its place
        base = self.Offset()
        relative = [base + 4 * (n - j) - off for j, off in enumerate(offsets)]
        self.head = self.head - 4 * n
        self.Bytes[self.head:self.head + 4 * n] = struct.pack(f"<{n}I", *relative)
        return self.EndVector()

    def data_vector(self, raw: np.ndarray) -> int:
        """A [ubyte] vector of `raw` (1-D uint8), 8-byte aligned and zero-padded to a multiple of 8,
        copied with ONE slice assignment (never element by element), or deferred to `write_to`."""
        n = raw.size
        padded = padded_size(n)
        self.StartVector(1, padded, DATA_ALIGNMENT)
        self.head = self.head - padded
        start = self.head
        if self.deferred is not None and n >= self.DEFER_BYTES:
            self.deferred.append((len(self.Bytes) - start, raw))  # distance from the end survives growth
        else:
            self.Bytes[start:start + n] = raw.data
        self.Bytes[start + n:start + padded] = bytes(padded - n)
        return self.EndVector()

    def byte_vector(self, raw: np.ndarray) -> int:
        """A [ubyte] vector of `raw` (1-D uint8) of exactly its length: a field that is not tensor data
        (CUSTOM's implementation_attrs), whose reader takes every byte as content."""
        return self.CreateNumpyVector(raw)

    def finished_view(self) -> memoryview:
        """The finished file in memory: the buffer itself, or (external data) the buffer and its
        data section joined in one new buffer."""
        assert not self.deferred, "data was deferred: use write_to"
        view = memoryview(self.Bytes)[self.Head():]
        if not self.external:
            return view
        out = bytearray(self.external_base + self.external_size)
        out[:len(view)] = view
        for _, start, raw in self.external:
            out[self.external_base + start:self.external_base + start + raw.size] = raw.data
        return memoryview(out)

    def write_to(self, f: Any) -> None:
        """Write the file: the buffer, deferred data spliced in, then the data section (each tensor's
        bytes straight from its array, e.g. the mapped input, zero padding between)."""
        view = memoryview(self.Bytes)
        pos = self.Head()
        for start, raw in sorted((len(self.Bytes) - rel, raw) for rel, raw in self.deferred or []):
            f.write(view[pos:start])
            f.write(raw.data)
            pos = start + raw.size
        f.write(view[pos:])
        written = len(self.Bytes) - self.Head()
        for _, start, raw in self.external or []:
            f.write(bytes(self.external_base + start - written))
            f.write(raw.data)
            written = self.external_base + start + raw.size
        if self.external:
            f.write(bytes(self.external_base + self.external_size - written))


def hashable(value: Any) -> Any:
    return tuple(hashable(v) for v in value) if isinstance(value, (list, tuple, np.ndarray)) else value


def camel(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in name.split("_"))


class Names:
    """Unique tensor names: graph inputs and outputs keep theirs (a repeated name gets a suffix),
    every other tensor is layer_<k>, skipping names already taken."""

    def __init__(self) -> None:
        self.taken: set[str] = set()
        self.counter = 0
        self.next_suffix: dict[str, int] = {}  # so that 50,000 outputs of one name take linear time

    def claim(self, wanted: str) -> str:
        name, k = wanted, self.next_suffix.get(wanted, 1)
        while name in self.taken:
            name, k = f"{wanted}_{k}", k + 1
        self.next_suffix[wanted] = k
        self.taken.add(name)
        return name

    def fresh(self) -> str:
        while f"layer_{self.counter}" in self.taken:
            self.counter += 1
        return self.claim(f"layer_{self.counter}")


def constant_bytes(graph: Graph, node: int) -> int:
    """Bytes the node's constant data takes in the flatbuffer (0 for other ops)."""
    op = graph.op(node)
    if op in ("tosa.const", "tosa.variable"):
        values = graph.attrs(node).get("values" if op == "tosa.const" else "initial_value")
        if values is None:
            return 0
        result = graph.types(node)[0] if op == "tosa.const" else None  # a tensor
        dtype = result.dtype if result is not None else graph.attrs(node)["type"]  # type: ignore[union-attr]
        per_element = {"i4": 0.5, "i48": 6, "i1": 1}.get(dtype, TensorType((), dtype).numpy_dtype.itemsize)
        return padded_size(int(np.ceil(values.size * per_element)))
    if op == "tosa.const_shape":
        return padded_size(graph.attrs(node)["values"].size * 8)
    return 0


def unique_io_names(graph: Graph) -> tuple[list[str], list[str]]:
    """The tensor names of a graph's inputs and outputs as both emitters write them: each keeps its
    name, a repeated one gets a suffix (_1, _2, ...), inputs first."""
    names = Names()
    return [names.claim(graph.input_name(n)) for n in graph.inputs], [names.claim(o.name) for o in graph.outputs]


__all__ = ["DATA_ALIGNMENT", "EXTERNAL_ALIGNMENT", "FlatBuilder", "Names", "camel", "constant_bytes", "hashable", "padded_size",
           "storage_bytes", "unique_io_names"]
