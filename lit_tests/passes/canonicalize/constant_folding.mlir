// RUN: %nn2tosa opt %s --passes=canonicalize | %FileCheck %s

// Ops computable from constants fold (registry folders run inside the driver), through a chain,
// and the constants they read go away.
// CHECK-LABEL: sym_name = "main"
// CHECK: ^bb0(%[[X:[^:]*]]:
// CHECK-NEXT: %[[C:.*]] = "nn.constant"() {value = dense<[3.000000e+00, 5.000000e+00]> : tensor<2xf32>}
// CHECK-NEXT: %[[M:.*]] = "nn.mul"(%[[X]], %[[C]])
// CHECK-NEXT: "func.return"(%[[M]])
func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  %a = "nn.constant"() {value = dense<[[1.0], [2.0]]> : tensor<2x1xf32>} : () -> tensor<2x1xf32>
  %b = "nn.reshape"(%a) {shape = array<i64: 2>} : (tensor<2x1xf32>) -> tensor<2xf32>
  %two = "nn.constant"() {value = dense<2.0> : tensor<2xf32>} : () -> tensor<2xf32>
  %c = "nn.mul"(%b, %two) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %one = "nn.constant"() {value = dense<1.0> : tensor<2xf32>} : () -> tensor<2xf32>
  %d = "nn.add"(%c, %one) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %r = "nn.mul"(%x, %d) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %r : tensor<2xf32>
}

// A fold that would write a large constant from a small one (broadcast_to of a scalar to 64x64x2)
// is left to the target.
// CHECK-LABEL: sym_name = "growing"
// CHECK: "nn.broadcast_to"
func.func @growing(%x: tensor<64x64x2xf32>) -> tensor<64x64x2xf32> {
  %a = "nn.constant"() {value = dense<1.5> : tensor<f32>} : () -> tensor<f32>
  %b = "nn.broadcast_to"(%a) {shape = array<i64: 64, 64, 2>} : (tensor<f32>) -> tensor<64x64x2xf32>
  %r = "nn.sub"(%x, %b) : (tensor<64x64x2xf32>, tensor<64x64x2xf32>) -> tensor<64x64x2xf32>
  return %r : tensor<64x64x2xf32>
}

// pad of a constant folds (nn.pad's folder, added for canonicalization), in every mode.
// CHECK-LABEL: sym_name = "pads"
// CHECK-DAG: "nn.constant"() {value = dense<[9.000000e+00, 1.000000e+00, 2.000000e+00, 9.000000e+00]> : tensor<4xf32>}
// CHECK-DAG: "nn.constant"() {value = dense<[2.000000e+00, 1.000000e+00, 2.000000e+00, 1.000000e+00]> : tensor<4xf32>}
// CHECK-NOT: "nn.pad"
func.func @pads() -> (tensor<4xf32>, tensor<4xf32>) {
  %a = "nn.constant"() {value = dense<[1.0, 2.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %b = "nn.pad"(%a) {pads = array<i64: 1, 1>, mode = "constant", value = 9.0 : f64} : (tensor<2xf32>) -> tensor<4xf32>
  %c = "nn.pad"(%a) {pads = array<i64: 1, 1>, mode = "reflect", value = 0.0 : f64} : (tensor<2xf32>) -> tensor<4xf32>
  return %b, %c : tensor<4xf32>, tensor<4xf32>
}
