// RUN: %nn2tosa opt %s --passes=legalize-mps | %FileCheck %s

// Activations and softmax: PyTorch's semantics with the node's parameters.

// approximate="tanh" is the tanh formula (the MPS runtime's tanh(x) * x is not what the file asks);
// hardtanh and clamp are nn.clamp (an open side of clamp's min_max is infinite); softmax's dim -1 is
// the last axis.
// CHECK-LABEL: sym_name = "activations"
// CHECK: ^bb0(%[[X:[^:]*]]:
// CHECK: %[[G:.*]] = "nn.gelu"(%[[X]]) {approximate = "tanh"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: %[[E:.*]] = "nn.gelu"(%[[X]]) {approximate = "none"}
// CHECK-NEXT: %[[H:.*]] = "nn.clamp"(%[[X]]) {max = 3.000000e+00 : f64, min = -2.000000e+00 : f64}
// CHECK-NEXT: %[[C:.*]] = "nn.clamp"(%[[X]]) {max = 0x7FF0000000000000 : f64, min = -5.000000e-01 : f64}
// CHECK-NEXT: %[[L:.*]] = "nn.leaky_relu"(%[[X]]) {alpha = 0.20000000298023224 : f64}
// CHECK-NEXT: %[[S:.*]] = "nn.softmax"(%[[X]]) {axis = 1 : i64, beta = 1.000000e+00 : f64}
// CHECK-NEXT: %[[LS:.*]] = "nn.log_softmax"(%[[X]]) {axis = 0 : i64, beta = 1.000000e+00 : f64}
// CHECK-NEXT: %[[R:.*]] = "nn.relu"(%[[X]])
// CHECK-NEXT: "func.return"(%[[G]], %[[E]], %[[H]], %[[C]], %[[L]], %[[S]], %[[LS]], %[[R]])
func.func @activations(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) {
  %0 = "mps.GELU"(%x) {approximate = "tanh"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = "mps.GELU"(%x) {approximate = "none"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = "mps.HardTanh"(%x) {max_value = 3.0 : f32, min_value = -2.0 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %3 = "mps.Clamp"(%x) {max_value = 0x7F800000 : f32, min_value = -0.5 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %4 = "mps.LeakyReLU"(%x) {negative_slope = 0.2 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %5 = "mps.Softmax"(%x) {dim = -1 : i32, half_to_float = false} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %6 = "mps.LogSoftmax"(%x) {dim = 0 : i32, half_to_float = false} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %7 = "mps.ReLU"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0, %1, %2, %3, %4, %5, %6, %7 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
}

// A unary float function of an integer computes in the declared float type; rounding an integer
// is the integer; isinf of f16 stays f16 and needs no cast at the boolean output.
// CHECK-LABEL: sym_name = "unary_types"
// CHECK: ^bb0(%[[I:[^:]*]]: {{[^%]*}}, %[[H:[^:]*]]:
// CHECK: %[[F:.*]] = "nn.cast"(%[[I]]) : (tensor<4xi32>) -> tensor<4xf32>
// CHECK-NEXT: %[[SQ:.*]] = "nn.sqrt"(%[[F]])
// CHECK-NEXT: %[[INF:.*]] = "nn.isinf"(%[[H]]) : (tensor<4xf16>) -> tensor<4xi1>
// CHECK-NEXT: "func.return"(%[[SQ]], %[[I]], %[[INF]])
func.func @unary_types(%i: tensor<4xi32>, %h: tensor<4xf16>) -> (tensor<4xf32>, tensor<4xi32>, tensor<4xi1>) {
  %0 = "mps.Sqrt"(%i) : (tensor<4xi32>) -> tensor<4xf32>
  %1 = "mps.Round"(%i) : (tensor<4xi32>) -> tensor<4xi32>
  %2 = "mps.Isinf"(%h) : (tensor<4xf16>) -> tensor<4xi1>
  return %0, %1, %2 : tensor<4xf32>, tensor<4xi32>, tensor<4xi1>
}
