"""Atomic writes: all or nothing."""
import pytest

from nn2tosa.fileio import write_atomic


def test_write_atomic_replaces_whole_file(tmp_path):
    p = tmp_path / "out.bin"
    p.write_bytes(b"old")
    write_atomic(p, b"new contents")
    assert p.read_bytes() == b"new contents"


def test_failure_midway_keeps_the_old_file_and_leaves_no_temporary(tmp_path):
    p = tmp_path / "out.bin"
    p.write_bytes(b"old")

    def writer(f):
        f.write(b"partial")
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        write_atomic(p, writer)
    assert p.read_bytes() == b"old"
    assert [q.name for q in tmp_path.iterdir()] == ["out.bin"]


def test_a_write_failing_after_another_leaves_neither_and_names_the_target(tmp_path):
    """The all-or-nothing path that the CLI's early path checks cannot foresee (a directory that
    vanishes, a full disk): the first output's temporary goes, the existing file stays."""
    import pytest

    from nn2tosa.fileio import all_or_nothing, write_atomic

    first = tmp_path / "a.tosa"
    first.write_bytes(b"old")
    missing = tmp_path / "missing" / "b.mlir"
    with pytest.raises(OSError) as e:
        with all_or_nothing():
            write_atomic(first, b"new")
            write_atomic(missing, b"x")
    assert e.value.filename == str(missing)
    assert first.read_bytes() == b"old" and sorted(p.name for p in tmp_path.iterdir()) == ["a.tosa"]
