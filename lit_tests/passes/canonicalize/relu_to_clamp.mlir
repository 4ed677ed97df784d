// RUN: %nn2tosa opt %s --passes=canonicalize | %FileCheck %s

// relu becomes clamp(0, +inf), and the clamp survives a print/parse round trip.
// CHECK-LABEL: sym_name = "main"
// CHECK: ^bb0(%[[X:[^:]*]]:
// CHECK-NOT: nn.relu
// CHECK: %[[C:.*]] = "nn.clamp"(%[[X]]) {max = 0x7FF0000000000000 : f64, min = 0.000000e+00 : f64}
// CHECK: "func.return"(%[[C]])
func.func @main(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %r = "nn.relu"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %r : tensor<2x3xf32>
}
