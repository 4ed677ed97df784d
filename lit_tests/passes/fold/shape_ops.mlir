// RUN: %nn2tosa opt %s --passes=fold,dce | %FileCheck %s

// reshape and transpose of constants fold; a transpose of a graph input does not.
// CHECK-NOT: "nn.reshape"
// CHECK-DAG: %[[C:.*]] = "nn.constant"() {value = dense<{{\[}}[1, 3], [2, 4]]> : tensor<2x2xi32>}
// CHECK-DAG: %[[T:.*]] = "nn.transpose"(%arg0)
// CHECK-NOT: "nn.reshape"
// CHECK: "func.return"(%[[C]], %[[T]])
func.func @main(%x: tensor<2x3xf32>) -> (tensor<2x2xi32>, tensor<3x2xf32>) {
  %a = "nn.constant"() {value = dense<[1, 2, 3, 4]> : tensor<4xi32>} : () -> tensor<4xi32>
  %r = "nn.reshape"(%a) {shape = array<i64: 2, 2>} : (tensor<4xi32>) -> tensor<2x2xi32>
  %t = "nn.transpose"(%r) {perm = array<i64: 1, 0>} : (tensor<2x2xi32>) -> tensor<2x2xi32>
  %u = "nn.transpose"(%x) {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %t, %u : tensor<2x2xi32>, tensor<3x2xf32>
}
