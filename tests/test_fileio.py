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
