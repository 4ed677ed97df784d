// --target: a transposed convolution of int8 data (stride 2, 3 x 3, TFLite's SAME: 4 -> 8, out_pad
// -1 at the bottom and right). Without a preset one TRANSPOSE_CONV2D and its RESCALE. Vela fuses no
// requantizing RESCALE into a TRANSPOSE_CONV2D, so under every Ethos-U preset the input is spread by
// the stride instead (a TRANSPOSE_CONV2D of 1x1 identity weights with the input zero point 3, then a
// RESCALE by 1 putting the zero point back: the gaps hold 3, real 0), and a stride-1 CONV2D of the
// kernel flipped in both axes, padded by K - 1 + out_pad = 2 top/left and 1 bottom/right, computes
// the same sums; its RESCALE is the requantization (lowering/npu_target.py, docs/vela.md).
// RUN: %nn2tosa opt %s --passes=lower-to-tosa,cse,dce | %FileCheck %s --check-prefix=ONE
// RUN: %nn2tosa opt %s --target ethos-u55 --passes=lower-to-tosa,cse,dce | %FileCheck %s --check-prefix=SPREAD
// RUN: %nn2tosa opt %s --target ethos-u65 --passes=lower-to-tosa,cse,dce | %FileCheck %s --check-prefix=SPREAD
// RUN: %nn2tosa opt %s --target ethos-u85 --passes=lower-to-tosa,cse,dce | %FileCheck %s --check-prefix=SPREAD

// ONE-NOT: "tosa.conv2d"
// ONE: %[[ACC:.*]] = "tosa.transpose_conv2d"(%arg{{[0-9]+}}, {{.*}}) <{acc_type = i32, out_pad = array<i64: 0, -1, 0, -1>, stride = array<i64: 2, 2>}> : {{.*}} -> tensor<1x8x8x1xi32>
// ONE: "tosa.rescale"(%[[ACC]], {{.*}}) -> tensor<1x8x8x1xi8>
// ONE-NOT: "tosa.conv2d"

// SPREAD: %[[I:.*]] = "tosa.const"() <{values = dense<{{\[\[\[\[}}1, 0]]], {{\[\[\[}}0, 1]]]]> : tensor<2x1x1x2xi8>}>
// SPREAD: %[[ZP:.*]] = "tosa.const"() <{values = dense<3> : tensor<1xi8>}>
// SPREAD: %[[S:.*]] = "tosa.transpose_conv2d"(%arg{{[0-9]+}}, %[[I]], %{{.*}}, %[[ZP]], %{{.*}}) <{acc_type = i32, out_pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 2, 2>}> : {{.*}} -> tensor<1x7x7x2xi32>
// SPREAD: %[[M:.*]] = "tosa.const"() <{values = dense<1073741824> : tensor<1xi32>}>
// SPREAD: %[[SH:.*]] = "tosa.const"() <{values = dense<30> : tensor<1xi8>}>
// SPREAD: %[[X:.*]] = "tosa.rescale"(%[[S]], %[[M]], %[[SH]], %{{.*}}, %[[ZP]]) {{.*}} -> tensor<1x7x7x2xi8>
// SPREAD: %[[W:.*]] = "tosa.const"() <{values = dense<{{\[\[\[\[}}9, 9], [8, 8], [7, 7]], {{\[\[}}6, 6], [5, 5], [4, 4]], {{\[\[}}3, 3], [2, 2], [1, 1]]]]> : tensor<1x3x3x2xi8>}>
// SPREAD: %[[ACC:.*]] = "tosa.conv2d"(%[[X]], %[[W]], %{{.*}}, %[[ZP]], %{{.*}}) <{acc_type = i32, dilation = array<i64: 1, 1>, pad = array<i64: 2, 1, 2, 1>, stride = array<i64: 1, 1>}> : {{.*}} -> tensor<1x8x8x1xi32>
// SPREAD: "tosa.rescale"(%[[ACC]], {{.*}}) -> tensor<1x8x8x1xi8>
func.func @transpose_conv_same(%x: tensor<1x4x4x2x!quant.uniform<i8:f32, 0.05:3>>) -> tensor<1x8x8x1x!quant.uniform<i8:f32, 0.1:-2>> {
  %w = "nn.constant"() {value = dense<[[[[1, 1], [2, 2], [3, 3]], [[4, 4], [5, 5], [6, 6]], [[7, 7], [8, 8], [9, 9]]]]> : tensor<1x3x3x2xi8>} : () -> tensor<1x3x3x2x!quant.uniform<i8:f32, 0.01>>
  %y = "nn.transpose_conv2d"(%x, %w) {stride = array<i64: 2, 2>, out_pad = array<i64: 0, -1, 0, -1>} : (tensor<1x4x4x2x!quant.uniform<i8:f32, 0.05:3>>, tensor<1x3x3x2x!quant.uniform<i8:f32, 0.01>>) -> tensor<1x8x8x1x!quant.uniform<i8:f32, 0.1:-2>>
  return %y : tensor<1x8x8x1x!quant.uniform<i8:f32, 0.1:-2>>
}
