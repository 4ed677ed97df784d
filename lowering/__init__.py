"""nn -> tosa lowering and the MLIR and flatbuffer emitters."""
