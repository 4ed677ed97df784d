// RUN: %nn2tosa opt %s --passes=layout | %FileCheck %s

// NHWC -> NCHW transpose, relu, add of a [C, 1, 1] constant, NCHW -> NHWC: the ops compute in
// NHWC, the constant is transposed at compile time to [1, 1, 1, C]... after being broadcast to
// rank 4, and both transposes are gone.
// CHECK-LABEL: sym_name = "main"
// CHECK: ^bb0(%[[X:[^:]*]]:
// CHECK-NOT: nn.transpose
// CHECK-DAG: %[[R:.*]] = "nn.relu"(%[[X]]) : (tensor<1x2x2x3xf32>) -> tensor<1x2x2x3xf32>
// CHECK-DAG: %[[C:.*]] = "nn.constant"() {value = dense<{{\[\[\[\[}}1.000000e+00, 2.000000e+00, 3.000000e+00]]]]> : tensor<1x1x1x3xf32>}
// CHECK: %[[A:.*]] = "nn.add"(%[[R]], %[[C]]) : (tensor<1x2x2x3xf32>, tensor<1x1x1x3xf32>) -> tensor<1x2x2x3xf32>
// CHECK-NOT: nn.transpose
// CHECK: "func.return"(%[[A]])
func.func @main(%x: tensor<1x2x2x3xf32>) -> tensor<1x2x2x3xf32> {
  %t = "nn.transpose"(%x) {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x2x2x3xf32>) -> tensor<1x3x2x2xf32>
  %r = "nn.relu"(%t) : (tensor<1x3x2x2xf32>) -> tensor<1x3x2x2xf32>
  %c = "nn.constant"() {value = dense<[[[1.0]], [[2.0]], [[3.0]]]> : tensor<3x1x1xf32>} : () -> tensor<3x1x1xf32>
  %a = "nn.add"(%r, %c) : (tensor<1x3x2x2xf32>, tensor<3x1x1xf32>) -> tensor<1x3x2x2xf32>
  %u = "nn.transpose"(%a) {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x3x2x2xf32>) -> tensor<1x2x2x3xf32>
  return %u : tensor<1x2x2x3xf32>
}
