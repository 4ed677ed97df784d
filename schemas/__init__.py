"""Flatbuffer schemas the project reads and writes, and the code generated from them."""
