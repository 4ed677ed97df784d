// RUN: %nn2tosa opt %s --passes=layout | %FileCheck %s

// conv -> to NCHW -> relu, read by two branches that each go back to NHWC for a conv, and an
// add of both in NCHW: every pair cancels, the branches share the relu, and only the output
// transpose remains.
// CHECK-LABEL: sym_name = "main"
// CHECK: ^bb0(%[[X:[^:]*]]:
// CHECK: %[[C0:.*]] = "nn.conv2d"(%[[X]],
// CHECK: %[[R:.*]] = "nn.relu"(%[[C0]])
// CHECK-DAG: %[[C1:.*]] = "nn.conv2d"(%[[R]],
// CHECK-DAG: %[[C2:.*]] = "nn.conv2d"(%[[R]],
// CHECK: %[[A:.*]] = "nn.add"(%[[C1]], %[[C2]])
// CHECK: %[[OUT:.*]] = "nn.transpose"(%[[A]]) {perm = array<i64: 0, 3, 1, 2>}
// CHECK-NOT: nn.transpose
// CHECK: "func.return"(%[[OUT]])
func.func @main(%x: tensor<1x3x3x2xf32>) -> tensor<1x2x3x3xf32> {
  %w = "nn.constant"() {value = dense<1.0> : tensor<2x1x1x2xf32>} : () -> tensor<2x1x1x2xf32>
  %c0 = "nn.conv2d"(%x, %w) {stride = array<i64: 1, 1>, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, groups = 1 : i64} : (tensor<1x3x3x2xf32>, tensor<2x1x1x2xf32>) -> tensor<1x3x3x2xf32>
  %t0 = "nn.transpose"(%c0) {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x3x3x2xf32>) -> tensor<1x2x3x3xf32>
  %r = "nn.relu"(%t0) : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %t1 = "nn.transpose"(%r) {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x2x3x3xf32>) -> tensor<1x3x3x2xf32>
  %c1 = "nn.conv2d"(%t1, %w) {stride = array<i64: 1, 1>, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, groups = 1 : i64} : (tensor<1x3x3x2xf32>, tensor<2x1x1x2xf32>) -> tensor<1x3x3x2xf32>
  %u1 = "nn.transpose"(%c1) {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x3x3x2xf32>) -> tensor<1x2x3x3xf32>
  %t2 = "nn.transpose"(%r) {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x2x3x3xf32>) -> tensor<1x3x3x2xf32>
  %c2 = "nn.conv2d"(%t2, %w) {stride = array<i64: 1, 1>, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, groups = 1 : i64} : (tensor<1x3x3x2xf32>, tensor<2x1x1x2xf32>) -> tensor<1x3x3x2xf32>
  %u2 = "nn.transpose"(%c2) {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x3x3x2xf32>) -> tensor<1x2x3x3xf32>
  %a = "nn.add"(%u1, %u2) : (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  return %a : tensor<1x2x3x3xf32>
}
