// RUN: %nn2tosa opt %s --passes=fold,dce | %FileCheck %s

// tosa.transpose and tosa.identity of constants fold into one tosa.const; the transpose of
// a graph input stays.
// CHECK-NOT: "tosa.identity"
// CHECK-DAG: %[[C:.*]] = "tosa.const"() <{values = dense<{{\[}}[1, 4], [2, 5], [3, 6]]> : tensor<3x2xi32>}>
// CHECK-DAG: %[[T:.*]] = "tosa.transpose"(%arg0) <{perms = array<i32: 1, 0>}>
// CHECK: "func.return"(%[[C]], %[[T]])
func.func @main(%x: tensor<2x3xf32>) -> (tensor<3x2xi32>, tensor<3x2xf32>) {
  %a = "tosa.const"() <{values = dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi32>}> : () -> tensor<2x3xi32>
  %t = "tosa.transpose"(%a) <{perms = array<i32: 1, 0>}> : (tensor<2x3xi32>) -> tensor<3x2xi32>
  %i = "tosa.identity"(%t) : (tensor<3x2xi32>) -> tensor<3x2xi32>
  %u = "tosa.transpose"(%x) <{perms = array<i32: 1, 0>}> : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %i, %u : tensor<3x2xi32>, tensor<3x2xf32>
}
