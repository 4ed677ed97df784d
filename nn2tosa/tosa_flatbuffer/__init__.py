"""The TOSA flatbuffer forms of the tosa dialect, shared by the `.tosa` writers (nn2tosa.lowering)
and the `.tosa` reader (nn2tosa.frontend.tosa): `layout_1_0` (TOSA 1.0), `layout_0100` (the 0.100
draft) and `common` (constant encoding, the once-sized Builder, tensor names)."""
