// The NPU-friendly shapes of quantized ops (TFLite's integers, the default semantics): each is
// checked at lowering to give the kernel's integers for every input it can have.
// RUN: %nn2tosa opt %s --passes=lower-to-tosa,cse,dce | %FileCheck %s

// relu6 with requantization (0.1 -> 0.05): TFLite's QuantizedReluX is one requantization and a clamp,
// so RESCALE (x2: 2**30 >> 29) + CLAMP to [zp, zp + round(6 / 0.05)] = [-128, -8], not a TABLE
// (the lower bound is the RESCALE's own saturation: no bound needed there)
// CHECK-LABEL: sym_name = "relu6_requantize"
// CHECK-NOT: "tosa.table"
// CHECK-DAG: %[[M:.*]] = "tosa.const"() <{values = dense<1073741824> : tensor<1xi32>}>
// CHECK-DAG: %[[S:.*]] = "tosa.const"() <{values = dense<29> : tensor<1xi8>}>
// CHECK: %[[R:.*]] = "tosa.rescale"(%arg{{[0-9]+}}, %[[M]], %[[S]], {{.*}}) -> tensor<2x8xi8>
// CHECK: %[[C:.*]] = "tosa.clamp"(%[[R]]) <{max_val = -8 : i8, min_val = -128 : i8
// CHECK: "func.return"(%[[C]])
func.func @relu6_requantize(%x: tensor<2x8x!quant.uniform<i8:f32, 0.1:-3>>) -> tensor<2x8x!quant.uniform<i8:f32, 0.05:-128>> {
  %y = "nn.clamp"(%x) {min = 0.0 : f64, max = 6.0 : f64} : (tensor<2x8x!quant.uniform<i8:f32, 0.1:-3>>) -> tensor<2x8x!quant.uniform<i8:f32, 0.05:-128>>
  return %y : tensor<2x8x!quant.uniform<i8:f32, 0.05:-128>>
}

// A mean of three elements at one scale: AVG_POOL2D (its one rounding of sum / 3 agrees with
// TFLite's two roundings for every possible sum; for 4 elements or more they differ somewhere)
// CHECK-LABEL: sym_name = "mean_of_three"
// CHECK: %[[Y:.*]] = "tosa.avg_pool2d"(%arg{{[0-9]+}}, %{{.*}}, %{{.*}}) <{acc_type = i32, kernel = array<i64: 1, 3>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>}>
// CHECK-NEXT: "func.return"(%[[Y]])
func.func @mean_of_three(%x: tensor<1x1x3x8x!quant.uniform<i8:f32, 0.05:-128>>) -> tensor<1x1x1x8x!quant.uniform<i8:f32, 0.05:-128>> {
  %y = "nn.reduce_mean"(%x) {axes = array<i64: 1, 2>, keep_dims = true} : (tensor<1x1x3x8x!quant.uniform<i8:f32, 0.05:-128>>) -> tensor<1x1x1x8x!quant.uniform<i8:f32, 0.05:-128>>
  return %y : tensor<1x1x1x8x!quant.uniform<i8:f32, 0.05:-128>>
}

// A global mean, then a reshape undoing keep_dims = false: the DEPTHWISE_CONV2D sum and TFLite's
// RESCALE; the reshape to [1, 8] and the one back to [1, 1, 1, 8] cancel (no RESHAPE at all).
// CHECK-LABEL: sym_name = "mean_then_reshape"
// CHECK: %[[S:.*]] = "tosa.depthwise_conv2d"
// CHECK: %[[Y:.*]] = "tosa.rescale"(%[[S]], {{.*}}) -> tensor<1x1x1x8xi8>
// CHECK-NOT: "tosa.reshape"
// CHECK: "func.return"(%[[Y]])
func.func @mean_then_reshape(%x: tensor<1x7x7x8x!quant.uniform<i8:f32, 0.05:-128>>) -> tensor<1x1x1x8x!quant.uniform<i8:f32, 0.01:-128>> {
  %m = "nn.reduce_mean"(%x) {axes = array<i64: 1, 2>, keep_dims = false} : (tensor<1x7x7x8x!quant.uniform<i8:f32, 0.05:-128>>) -> tensor<1x8x!quant.uniform<i8:f32, 0.01:-128>>
  %r = "nn.reshape"(%m) {shape = array<i64: 1, 1, 1, 8>} : (tensor<1x8x!quant.uniform<i8:f32, 0.01:-128>>) -> tensor<1x1x1x8x!quant.uniform<i8:f32, 0.01:-128>>
  return %r : tensor<1x1x1x8x!quant.uniform<i8:f32, 0.01:-128>>
}

// A stride-2 1x1 convolution of an even 8 x 8 input: TOSA needs the windows to tile the input
// exactly. The last row is sliced off (the layout Vela keeps), the last column becomes a tap of
// weight zero point: the kernel is 1 x 2 with zeros in its second column, the input width stays 8.
// CHECK-LABEL: sym_name = "stride2_even_width"
// CHECK: %[[X:.*]] = "tosa.slice"(%arg{{[0-9]+}}, {{.*}}) : (tensor<1x8x8x4xi8>, {{.*}}) -> tensor<1x7x8x4xi8>
// CHECK: %[[W:.*]] = "tosa.const"() <{values = dense<{{\[\[\[\[}}3, 3, 3, 3], [0, 0, 0, 0]]], {{\[\[\[}}3, 3, 3, 3], [0, 0, 0, 0]]]]> : tensor<2x1x2x4xi8>}>
// CHECK: "tosa.conv2d"(%[[X]], %[[W]], {{.*}}) <{{.*}}pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 2, 2>}> : (tensor<1x7x8x4xi8>, tensor<2x1x2x4xi8>, {{.*}}) -> tensor<1x4x4x2xi32>
func.func @stride2_even_width(%x: tensor<1x8x8x4x!quant.uniform<i8:f32, 0.05:-128>>) -> tensor<1x4x4x2x!quant.uniform<i8:f32, 0.1:3>> {
  %w = "nn.constant"() {value = dense<3> : tensor<2x1x1x4xi8>} : () -> tensor<2x1x1x4x!quant.uniform<i8:f32, 0.01>>
  %y = "nn.conv2d"(%x, %w) {dilation = array<i64: 1, 1>, groups = 1 : i64, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 2, 2>} : (tensor<1x8x8x4x!quant.uniform<i8:f32, 0.05:-128>>, tensor<2x1x1x4x!quant.uniform<i8:f32, 0.01>>) -> tensor<1x4x4x2x!quant.uniform<i8:f32, 0.1:3>>
  return %y : tensor<1x4x4x2x!quant.uniform<i8:f32, 0.1:3>>
}
