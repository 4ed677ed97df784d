"""The errors nn2tosa reports to users, each with its exit code.

0 success; 2 invalid or corrupt input; 3 valid input with constructs nn2tosa cannot convert;
1 anything else (a bug). The CLI prints `nn2tosa: error: <message>` on one line.
"""
from __future__ import annotations

from dataclasses import dataclass


class Nn2TosaError(Exception):
    """Base of the errors the CLI turns into one line and an exit code."""

    exit_code = 1


class InvalidInputError(Nn2TosaError):
    """The input is corrupt, truncated or inconsistent. `where` names the place (byte offset,
    layer index and name, node index and type)."""

    exit_code = 2

    def __init__(self, message: str, *, file: str | None = None, where: str | None = None):
        self.message = message
        self.file = file
        self.where = where
        super().__init__(": ".join(p for p in (file, where, message) if p))

    def located(self, file: str) -> "InvalidInputError":
        """The same error naming `file` (frontends raise before they know the path)."""
        return InvalidInputError(self.message, file=self.file or file, where=self.where)


@dataclass(frozen=True)
class Unsupported:
    """One construct that cannot be converted: what it is, where, and why."""

    what: str  # e.g. "DetectionPostProcess"
    where: str  # e.g. "layer 7 'detect'"
    why: str

    def __str__(self) -> str:
        return f"{self.where} ({self.what}): {self.why}"


class UnsupportedError(Nn2TosaError):
    """Valid input that uses constructs nn2tosa cannot convert; lists all of them."""

    exit_code = 3

    def __init__(self, items: list[Unsupported], *, file: str | None = None):
        self.items = list(items)
        self.file = file
        n = len(self.items)
        head = f"{file}: " if file else ""
        super().__init__(f"{head}{n} unsupported construct{'s' if n != 1 else ''}: " + "; ".join(map(str, self.items)))

    def located(self, file: str) -> "UnsupportedError":
        return UnsupportedError(self.items, file=self.file or file)


class UsageError(Nn2TosaError):
    """The command line asks for something that cannot be done (bad option, unknown pass)."""

    exit_code = 2


# Partial conversion (nn2tosa/partial.py) needs the passes to leave what they cannot convert in place.
# ------------------------------------------------------------------------------ exit codes
_LONGEST_WORD = 1000  # a name longer than this (a hostile file's 70,000-character layer name) is elided


def _one_line(text: str) -> str:
    """`text` on one line, each overlong word (a name) cut to its ends and its length."""
    return " ".join(w if len(w) <= _LONGEST_WORD else f"{w[:80]}...[{len(w)} characters]...{w[-40:]}"
                    for w in text.split())


def error_exit(e: Exception) -> tuple[int, str]:
    """The exit code of an error that ends a conversion, and what to say about it on one line."""
    if isinstance(e, Nn2TosaError):
        return e.exit_code, _one_line(str(e))
    if isinstance(e, OSError):  # an output that cannot be written (no such directory, disk full): not a bug
        where = _one_line(str(e.filename)) + ": " if e.filename else ""
        return 2, f"{where}{_one_line(e.strerror or str(e))}"
    # a bug: say so in one line; --debug shows where
    return 1, f"internal error: {type(e).__name__}: {_one_line(str(e))} (rerun with --debug for the traceback)"
