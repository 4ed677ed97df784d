// --target: a transposed convolution of int8 data (stride 2, 3 x 3, TFLite's SAME: 4 -> 8, out_pad
// -1 at the bottom and right). Without a preset one TRANSPOSE_CONV2D and its RESCALE. Vela fuses no
// requantizing RESCALE into a TRANSPOSE_CONV2D, so under every Ethos-U preset it is stride-1 CONV2Ds
// of the input itself, one per row phase (lowering/rules/quantized_transpose_conv_npu.py): output row
// 2q reads input rows q - 1 and q through kernel rows 2 and 0, row 2q + 1 input row q through kernel
// row 1; the column phases likewise, as two output channels each (weight 0 where a phase reads no
// tap). Each CONV2D is requantized, a CONCAT along the width puts (q_y, r_y, q_x, r_x) in memory
// order, and a RESHAPE makes it the 8 x 8 output (lowering/npu_target.py, docs/vela.md).
// RUN: %nn2tosa opt %s --passes=lower-to-tosa,cse,dce | %FileCheck %s --check-prefix=ONE
// RUN: %nn2tosa opt %s --target ethos-u55 --passes=lower-to-tosa,cse,dce | %FileCheck %s --check-prefix=PHASE
// RUN: %nn2tosa opt %s --target ethos-u65 --passes=lower-to-tosa,cse,dce | %FileCheck %s --check-prefix=PHASE
// RUN: %nn2tosa opt %s --target ethos-u85 --passes=lower-to-tosa,cse,dce | %FileCheck %s --check-prefix=PHASE

// ONE-NOT: "tosa.conv2d"
// ONE: %[[ACC:.*]] = "tosa.transpose_conv2d"(%arg{{[0-9]+}}, {{.*}}) <{acc_type = i32, out_pad = array<i64: 0, -1, 0, -1>, stride = array<i64: 2, 2>}> : {{.*}} -> tensor<1x8x8x1xi32>
// ONE: "tosa.rescale"(%[[ACC]], {{.*}}) -> tensor<1x8x8x1xi8>
// ONE-NOT: "tosa.conv2d"

// PHASE-LABEL: sym_name = "transpose_conv_same"
// PHASE-NOT: "tosa.transpose_conv2d"
// PHASE: %[[W0:.*]] = "tosa.const"() <{values = dense<{{\[\[\[\[}}9, 9], [7, 7]], {{\[\[}}3, 3], [1, 1]]], {{\[\[\[}}0, 0], [8, 8]], {{\[\[}}0, 0], [2, 2]]]]> : tensor<2x2x2x2xi8>}>
// PHASE: %[[ZP:.*]] = "tosa.const"() <{values = dense<3> : tensor<1xi8>}>
// PHASE: %[[A0:.*]] = "tosa.conv2d"(%arg{{[0-9]+}}, %[[W0]], %{{.*}}, %[[ZP]], %{{.*}}) <{acc_type = i32, dilation = array<i64: 1, 1>, pad = array<i64: 1, 0, 1, 0>, stride = array<i64: 1, 1>}> : {{.*}} -> tensor<1x4x4x2xi32>
// PHASE: %[[R0:.*]] = "tosa.rescale"(%[[A0]], {{.*}}) -> tensor<1x4x4x2xi8>
// PHASE: %[[W1:.*]] = "tosa.const"() <{values = dense<{{\[\[\[\[}}6, 6], [4, 4]]], {{\[\[\[}}0, 0], [5, 5]]]]> : tensor<2x1x2x2xi8>}>
// PHASE: %[[A1:.*]] = "tosa.conv2d"(%arg{{[0-9]+}}, %[[W1]], %{{.*}}, %[[ZP]], %{{.*}}) <{acc_type = i32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 1, 0>, stride = array<i64: 1, 1>}> : {{.*}} -> tensor<1x4x4x2xi32>
// PHASE: %[[R1:.*]] = "tosa.rescale"(%[[A1]], {{.*}}) -> tensor<1x4x4x2xi8>
// PHASE: %[[C:.*]] = "tosa.concat"(%[[R0]], %[[R1]]) <{axis = 2 : i32}> : {{.*}} -> tensor<1x4x8x2xi8>
// PHASE: "tosa.reshape"(%[[C]], {{.*}}) : {{.*}} -> tensor<1x8x8x1xi8>
// PHASE-NOT: "tosa.slice"
func.func @transpose_conv_same(%x: tensor<1x4x4x2x!quant.uniform<i8:f32, 0.05:3>>) -> tensor<1x8x8x1x!quant.uniform<i8:f32, 0.1:-2>> {
  %w = "nn.constant"() {value = dense<[[[[1, 1], [2, 2], [3, 3]], [[4, 4], [5, 5], [6, 6]], [[7, 7], [8, 8], [9, 9]]]]> : tensor<1x3x3x2xi8>} : () -> tensor<1x3x3x2x!quant.uniform<i8:f32, 0.01>>
  %y = "nn.transpose_conv2d"(%x, %w) {stride = array<i64: 2, 2>, out_pad = array<i64: 0, -1, 0, -1>} : (tensor<1x4x4x2x!quant.uniform<i8:f32, 0.05:3>>, tensor<1x3x3x2x!quant.uniform<i8:f32, 0.01>>) -> tensor<1x8x8x1x!quant.uniform<i8:f32, 0.1:-2>>
  return %y : tensor<1x8x8x1x!quant.uniform<i8:f32, 0.1:-2>>
}

// 4 -> 7 (out_pad -2 at the bottom and right): 7 rows are no whole number of phases, the phases' output
// would need a slice, which Vela copies, so every preset spreads the input by the stride instead (a
// TRANSPOSE_CONV2D of 1x1 identity weights with the input zero point 3, then a RESCALE by 1 putting the
// zero point back: the gaps hold 3, real 0), and a stride-1 CONV2D of the kernel flipped in both axes,
// padded by K - 1 + out_pad = 2 top/left and 0 bottom/right, computes the same sums.
// PHASE-LABEL: sym_name = "transpose_conv_odd"
// PHASE: %[[I:.*]] = "tosa.const"() <{values = dense<{{\[\[\[\[}}1, 0]]], {{\[\[\[}}0, 1]]]]> : tensor<2x1x1x2xi8>}>
// PHASE: %[[S:.*]] = "tosa.transpose_conv2d"(%arg{{[0-9]+}}, %[[I]], %{{.*}}, %[[ZP2:.*]], %{{.*}}) <{acc_type = i32, out_pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 2, 2>}> : {{.*}} -> tensor<1x7x7x2xi32>
// PHASE: %[[M:.*]] = "tosa.const"() <{values = dense<1073741824> : tensor<1xi32>}>
// PHASE: %[[SH:.*]] = "tosa.const"() <{values = dense<30> : tensor<1xi8>}>
// PHASE: %[[X:.*]] = "tosa.rescale"(%[[S]], %[[M]], %[[SH]], %{{.*}}, %[[ZP2]]) {{.*}} -> tensor<1x7x7x2xi8>
// PHASE: %[[W:.*]] = "tosa.const"() <{values = dense<{{\[\[\[\[}}9, 9], [8, 8], [7, 7]], {{\[\[}}6, 6], [5, 5], [4, 4]], {{\[\[}}3, 3], [2, 2], [1, 1]]]]> : tensor<1x3x3x2xi8>}>
// PHASE: %[[ACC:.*]] = "tosa.conv2d"(%[[X]], %[[W]], %{{.*}}, %[[ZP2]], %{{.*}}) <{acc_type = i32, dilation = array<i64: 1, 1>, pad = array<i64: 2, 0, 2, 0>, stride = array<i64: 1, 1>}> : {{.*}} -> tensor<1x7x7x1xi32>
// PHASE: "tosa.rescale"(%[[ACC]], {{.*}}) -> tensor<1x7x7x1xi8>
func.func @transpose_conv_odd(%x: tensor<1x4x4x2x!quant.uniform<i8:f32, 0.05:3>>) -> tensor<1x7x7x1x!quant.uniform<i8:f32, 0.1:-2>> {
  %w = "nn.constant"() {value = dense<[[[[1, 1], [2, 2], [3, 3]], [[4, 4], [5, 5], [6, 6]], [[7, 7], [8, 8], [9, 9]]]]> : tensor<1x3x3x2xi8>} : () -> tensor<1x3x3x2x!quant.uniform<i8:f32, 0.01>>
  %y = "nn.transpose_conv2d"(%x, %w) {stride = array<i64: 2, 2>, out_pad = array<i64: 0, -2, 0, -2>} : (tensor<1x4x4x2x!quant.uniform<i8:f32, 0.05:3>>, tensor<1x3x3x2x!quant.uniform<i8:f32, 0.01>>) -> tensor<1x7x7x1x!quant.uniform<i8:f32, 0.1:-2>>
  return %y : tensor<1x7x7x1x!quant.uniform<i8:f32, 0.1:-2>>
}
