// RUN: %nn2tosa opt %s --passes=lower-to-tosa,cse,dce | %FileCheck %s

// nn's out_pad is TOSA's (negative crops the full (in - 1) * stride + kernel output).
// CHECK-LABEL: sym_name = "shallow"
// CHECK: %[[Y:.*]] = "tosa.transpose_conv2d"({{.*}}) <{acc_type = f32, out_pad = array<i64: -1, 0, 1, -2>, stride = array<i64: 2, 2>}> : (tensor<1x3x3x2xf32>, tensor<4x3x3x2xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x6x6x4xf32>
// CHECK-NOT: "tosa.slice"
// CHECK: "func.return"(%[[Y]])
func.func @shallow(%x: tensor<1x3x3x2xf32>) -> tensor<1x6x6x4xf32> {
  %w = "nn.constant"() {value = dense<1.0> : tensor<4x3x3x2xf32>} : () -> tensor<4x3x3x2xf32>
  %y = "nn.transpose_conv2d"(%x, %w) {stride = array<i64: 2, 2>, out_pad = array<i64: -1, 0, 1, -2>} : (tensor<1x3x3x2xf32>, tensor<4x3x3x2xf32>) -> tensor<1x6x6x4xf32>
  return %y : tensor<1x6x6x4xf32>
}

// TOSA needs out_pad > -kernel: deeper crops keep 1 - kernel (-1 for a 2x2 kernel) and slice
// the rest off the result: 2 rows at the top, 1 at the bottom, 3 columns on the right.
// CHECK-LABEL: sym_name = "deep"
// CHECK: %[[T:.*]] = "tosa.transpose_conv2d"({{.*}}) <{acc_type = f32, out_pad = array<i64: -1, -1, 0, -1>, stride = array<i64: 2, 2>}> : ({{.*}}) -> tensor<1x6x7x1xf32>
// CHECK: %[[B:.*]] = "tosa.const_shape"() <{values = dense<[0, 2, 0, 0]> : tensor<4xindex>}>
// CHECK: %[[S:.*]] = "tosa.const_shape"() <{values = dense<[1, 3, 5, 1]> : tensor<4xindex>}>
// CHECK: %[[Y:.*]] = "tosa.slice"(%[[T]], %[[B]], %[[S]]) : ({{.*}}) -> tensor<1x3x5x1xf32>
// CHECK: "func.return"(%[[Y]])
func.func @deep(%x: tensor<1x4x4x1xf32>) -> tensor<1x3x5x1xf32> {
  %w = "nn.constant"() {value = dense<1.0> : tensor<1x2x2x1xf32>} : () -> tensor<1x2x2x1xf32>
  %y = "nn.transpose_conv2d"(%x, %w) {stride = array<i64: 2, 2>, out_pad = array<i64: -3, -2, 0, -3>} : (tensor<1x4x4x1xf32>, tensor<1x2x2x1xf32>) -> tensor<1x3x5x1xf32>
  return %y : tensor<1x3x5x1xf32>
}
