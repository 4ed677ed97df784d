// RUN: %nn2tosa opt %s --passes=canonicalize | %FileCheck %s

// An NCHW input feeds a conv directly and, scaled per channel, a second conv. The transpose in front
// of the second conv moves above the mul, where the input's transpose already exists: one transpose
// of the input remains, and the scale is transposed at compile time.
// CHECK-LABEL: sym_name = "main"
// CHECK: ^bb0(%[[X:[^:]*]]:
// CHECK: %[[T:.*]] = "nn.transpose"(%[[X]]) {perm = array<i64: 0, 2, 3, 1>}
// CHECK-NOT: "nn.transpose"
// CHECK-DAG: %[[S:.*]] = "nn.constant"() {value = dense<{{\[\[\[\[}}2.000000e+00, 3.000000e+00]]]]> : tensor<1x1x1x2xf32>}
// CHECK-DAG: %[[M:.*]] = "nn.mul"(%[[T]], %[[S]]) : (tensor<1x3x3x2xf32>, tensor<1x1x1x2xf32>) -> tensor<1x3x3x2xf32>
// CHECK-DAG: "nn.conv2d"(%[[T]],
// CHECK-DAG: "nn.conv2d"(%[[M]],
// CHECK-NOT: "nn.transpose"
func.func @main(%x: tensor<1x2x3x3xf32>) -> (tensor<1x3x3x2xf32>, tensor<1x3x3x2xf32>) {
  %w = "nn.constant"() {value = dense<1.0> : tensor<2x1x1x2xf32>} : () -> tensor<2x1x1x2xf32>
  %t = "nn.transpose"(%x) {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x2x3x3xf32>) -> tensor<1x3x3x2xf32>
  %a = "nn.conv2d"(%t, %w) {stride = array<i64: 1, 1>, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, groups = 1 : i64} : (tensor<1x3x3x2xf32>, tensor<2x1x1x2xf32>) -> tensor<1x3x3x2xf32>
  %s = "nn.constant"() {value = dense<[[[[2.0]], [[3.0]]]]> : tensor<1x2x1x1xf32>} : () -> tensor<1x2x1x1xf32>
  %m = "nn.mul"(%x, %s) : (tensor<1x2x3x3xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x3x3xf32>
  %u = "nn.transpose"(%m) {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x2x3x3xf32>) -> tensor<1x3x3x2xf32>
  %b = "nn.conv2d"(%u, %w) {stride = array<i64: 1, 1>, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, groups = 1 : i64} : (tensor<1x3x3x2xf32>, tensor<2x1x1x2xf32>) -> tensor<1x3x3x2xf32>
  return %a, %b : tensor<1x3x3x2xf32>, tensor<1x3x3x2xf32>
}
