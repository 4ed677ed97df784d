// RUN: %nn2tosa opt %s --passes=canonicalize | %FileCheck %s

// relu6 written as min(max(x, 0), 6) becomes one clamp(0, 6).
// CHECK-LABEL: sym_name = "relu6"
// CHECK: ^bb0(%[[X:[^:]*]]:
// CHECK-NEXT: %[[C:.*]] = "nn.clamp"(%[[X]]) {max = 6.000000e+00 : f64, min = 0.000000e+00 : f64}
// CHECK-NEXT: "func.return"(%[[C]])
func.func @relu6(%x: tensor<1x4xf32>) -> tensor<1x4xf32> {
  %zero = "nn.constant"() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
  %six = "nn.constant"() {value = dense<6.0> : tensor<1x4xf32>} : () -> tensor<1x4xf32>
  %a = "nn.maximum"(%x, %zero) : (tensor<1x4xf32>, tensor<f32>) -> tensor<1x4xf32>
  %b = "nn.minimum"(%six, %a) : (tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<1x4xf32>
  return %b : tensor<1x4xf32>
}

// relu then clamp(-1, 3): one clamp on the overlap of the ranges.
// CHECK-LABEL: sym_name = "relu_then_clamp"
// CHECK: ^bb0(%[[X:[^:]*]]:
// CHECK-NEXT: %[[C:.*]] = "nn.clamp"(%[[X]]) {max = 3.000000e+00 : f64, min = 0.000000e+00 : f64}
// CHECK-NEXT: "func.return"(%[[C]])
func.func @relu_then_clamp(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = "nn.relu"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %b = "nn.clamp"(%a) {min = -1.0 : f64, max = 3.0 : f64} : (tensor<4xf32>) -> tensor<4xf32>
  return %b : tensor<4xf32>
}

// Disjoint ranges do not merge (the result is a constant, not a clamp of x).
// CHECK-LABEL: sym_name = "disjoint"
// CHECK: "nn.clamp"{{.*}}max = 1.000000e+00 : f64, min = 0.000000e+00 : f64
// CHECK: "nn.clamp"{{.*}}max = 3.000000e+00 : f64, min = 2.000000e+00 : f64
func.func @disjoint(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = "nn.clamp"(%x) {min = 0.0 : f64, max = 1.0 : f64} : (tensor<4xf32>) -> tensor<4xf32>
  %b = "nn.clamp"(%a) {min = 2.0 : f64, max = 3.0 : f64} : (tensor<4xf32>) -> tensor<4xf32>
  return %b : tensor<4xf32>
}

// maximum with a constant holding different values, or one that broadcasts x wider, stays.
// CHECK-LABEL: sym_name = "not_a_bound"
// CHECK: "nn.maximum"
// CHECK: "nn.maximum"
// CHECK-NOT: "nn.clamp"
func.func @not_a_bound(%x: tensor<2xf32>) -> (tensor<2xf32>, tensor<3x2xf32>) {
  %c = "nn.constant"() {value = dense<[0.0, 1.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %d = "nn.constant"() {value = dense<0.0> : tensor<3x2xf32>} : () -> tensor<3x2xf32>
  %a = "nn.maximum"(%x, %c) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %b = "nn.maximum"(%x, %d) : (tensor<2xf32>, tensor<3x2xf32>) -> tensor<3x2xf32>
  return %a, %b : tensor<2xf32>, tensor<3x2xf32>
}

// Quantized: the bound is the constant's real value (0.5 * (10 - 4) = 3.0); the result keeps its type.
// CHECK-LABEL: sym_name = "quantized"
// CHECK: ^bb0(%[[X:[^:]*]]:
// CHECK-NEXT: %[[C:.*]] = "nn.clamp"(%[[X]]) {max = 0x7FF0000000000000 : f64, min = 3.000000e+00 : f64} : (tensor<4x!quant.uniform<i8:f32, 5.000000e-01:4>>) -> tensor<4x!quant.uniform<i8:f32, 2.500000e-01:-2>>
// CHECK-NEXT: "func.return"(%[[C]])
func.func @quantized(%x: tensor<4x!quant.uniform<i8:f32, 0.5:4>>) -> tensor<4x!quant.uniform<i8:f32, 0.25:-2>> {
  %c = "nn.constant"() {value = dense<10> : tensor<1xi8>} : () -> tensor<1x!quant.uniform<i8:f32, 0.5:4>>
  %a = "nn.maximum"(%x, %c) : (tensor<4x!quant.uniform<i8:f32, 0.5:4>>, tensor<1x!quant.uniform<i8:f32, 0.5:4>>) -> tensor<4x!quant.uniform<i8:f32, 0.25:-2>>
  return %a : tensor<4x!quant.uniform<i8:f32, 0.25:-2>>
}
