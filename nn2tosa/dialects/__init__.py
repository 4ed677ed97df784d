"""Dialects shared by passes and lowering: `nn` (canonical) and `tosa` (TOSA 1.0 level)."""
