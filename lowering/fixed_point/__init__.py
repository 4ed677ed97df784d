"""The fixed-point helpers of quantized lowering, in one place.

The quantized rules (lowering/rules/) reproduce TFLite's integer kernels or, with semantics "cpuref",
Arm NN CpuRef, which decodes quantized tensors to float32, computes in float32 and encodes the result.
TOSA computes on integers instead; what the rules share for that:

- `carrier`: how a quantized nn tensor is carried at TOSA level (`QInfo`, `qinfo`; unsigned types as
  signed ones) and the source's encoding of real values (`encode`, `decode`);
- `rescale`: RESCALE builders and the i32 fixed-point values rules compute on (`multiplier_shift`,
  `rescale`, `widen` / `narrow`, `clamp_int`, `saturate_to`), with the rounding each semantics needs;
- `tables`: TABLE contents (i8 exact, i16 interpolated) computed from the source semantics;
- `tflite`: TFLite's and gemmlowp's integer arithmetic on numpy integers (`quantize_multiplier`,
  `srdhm`, exp on negative values, int16 LUTs), for the constants and tables computed at lowering time;
- `gemmlowp16`: the same gemmlowp int16 steps built as TOSA ops (the NPU form of int16 logistic / tanh);
- `litert_kernels`: the integers LiteRT's kernels give on every input of an int8 / int16 tensor (models
  of kernels specific to one op register with `int8_kernel` beside the op's lowering);
- `litert_ops`: LiteRT's integer kernels built as TOSA integer ops where no table reproduces them (int16
  logistic / tanh, softmax, L2 normalization, division, the LSTM's inverse square root).
"""
