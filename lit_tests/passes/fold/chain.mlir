// RUN: %nn2tosa opt %s --passes=dce,fold | %FileCheck %s

// (a + b) * 2 - a folds to one constant; the op reading the graph input stays, and the
// constants that only fed folded ops are gone.
// CHECK: %[[C:.*]] = "nn.constant"() {value = dense<[7.000000e+00, 1.000000e+01]> : tensor<2xf32>}
// CHECK-NOT: nn.constant
// CHECK-NOT: nn.add
// CHECK: "nn.mul"(%arg0, %[[C]])
func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  %a = "nn.constant"() {value = dense<[1.0, 2.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %b = "nn.constant"() {value = dense<[3.0, 4.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %two = "nn.constant"() {value = dense<2.0> : tensor<2xf32>} : () -> tensor<2xf32>
  %s = "nn.add"(%a, %b) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %t = "nn.mul"(%s, %two) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %u = "nn.sub"(%t, %a) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %dead = "nn.neg"(%x) : (tensor<2xf32>) -> tensor<2xf32>
  %r = "nn.mul"(%x, %u) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %r : tensor<2xf32>
}
