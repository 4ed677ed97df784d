// RUN: %nn2tosa opt %s --passes=canonicalize | %FileCheck %s

// conv * [2, 3] then + [1, 1] then - 0.5: weights scaled, the bias created and shifted.
// CHECK-LABEL: sym_name = "mul_add_sub"
// CHECK: ^bb0(%[[X:[^:]*]]:
// CHECK-DAG: %[[W:.*]] = "nn.constant"() {value = dense<{{\[\[\[\[}}2.000000e+00]]], {{\[\[\[}}6.000000e+00]]]]> : tensor<2x1x1x1xf32>}
// CHECK-DAG: %[[B:.*]] = "nn.constant"() {value = dense<5.000000e-01> : tensor<2xf32>}
// CHECK: %[[C:.*]] = "nn.conv2d"(%[[X]], %[[W]], %[[B]])
// CHECK-NEXT: "func.return"(%[[C]])
func.func @mul_add_sub(%x: tensor<1x2x2x1xf32>) -> tensor<1x2x2x2xf32> {
  %w = "nn.constant"() {value = dense<[[[[1.0]]], [[[2.0]]]]> : tensor<2x1x1x1xf32>} : () -> tensor<2x1x1x1xf32>
  %c = "nn.conv2d"(%x, %w) {stride = array<i64: 1, 1>, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, groups = 1 : i64} : (tensor<1x2x2x1xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x2x2xf32>
  %s = "nn.constant"() {value = dense<[[[[2.0, 3.0]]]]> : tensor<1x1x1x2xf32>} : () -> tensor<1x1x1x2xf32>
  %one = "nn.constant"() {value = dense<1.0> : tensor<2xf32>} : () -> tensor<2xf32>
  %half = "nn.constant"() {value = dense<0.5> : tensor<f32>} : () -> tensor<f32>
  %m = "nn.mul"(%c, %s) : (tensor<1x2x2x2xf32>, tensor<1x1x1x2xf32>) -> tensor<1x2x2x2xf32>
  %a = "nn.add"(%one, %m) : (tensor<2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %r = "nn.sub"(%a, %half) : (tensor<1x2x2x2xf32>, tensor<f32>) -> tensor<1x2x2x2xf32>
  return %r : tensor<1x2x2x2xf32>
}

// A constant that varies along a spatial dimension is not per channel: the mul stays.
// CHECK-LABEL: sym_name = "not_per_channel"
// CHECK: "nn.conv2d"
// CHECK: "nn.mul"
func.func @not_per_channel(%x: tensor<1x2x2x1xf32>) -> tensor<1x2x2x2xf32> {
  %w = "nn.constant"() {value = dense<[[[[1.0]]], [[[2.0]]]]> : tensor<2x1x1x1xf32>} : () -> tensor<2x1x1x1xf32>
  %c = "nn.conv2d"(%x, %w) {stride = array<i64: 1, 1>, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, groups = 1 : i64} : (tensor<1x2x2x1xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x2x2xf32>
  %s = "nn.constant"() {value = dense<[[[2.0], [3.0]]]> : tensor<1x2x1xf32>} : () -> tensor<1x2x1xf32>
  %m = "nn.mul"(%c, %s) : (tensor<1x2x2x2xf32>, tensor<1x2x1xf32>) -> tensor<1x2x2x2xf32>
  return %m : tensor<1x2x2x2xf32>
}
