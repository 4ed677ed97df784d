// RUN: %nn2tosa opt %s --passes=canonicalize | %FileCheck %s
// RUN: %nn2tosa opt %s --passes=canonicalize,lower-to-tosa,cse,dce | %FileCheck %s --check-prefix=TOSA

// RMSNorm as PyTorch writes it: x * rsqrt(mean(x.pow(2)) + eps) * weight. The square is one
// multiplication, and the whole norm 8 TOSA ops (without the rewrite, nn.pow alone lowers to ~35).
// CHECK-LABEL: sym_name = "rms_norm"
// CHECK: ^bb0(%[[X:[^:]*]]:
// CHECK-NOT: "nn.pow"
// CHECK: %[[SQ:.*]] = "nn.mul"(%[[X]], %[[X]])
// CHECK: "nn.reduce_mean"(%[[SQ]])
// TOSA-LABEL: sym_name = "rms_norm"
// TOSA-NOT: "tosa.pow"
// TOSA-COUNT-1: "tosa.rsqrt"
// TOSA-NOT: "tosa.select"
// TOSA: "func.return"
func.func @rms_norm(%x: tensor<1x4x8xf32>) -> tensor<1x4x8xf32> {
  %two = "nn.constant"() {value = dense<2.0> : tensor<f32>} : () -> tensor<f32>
  %eps = "nn.constant"() {value = dense<1.0e-6> : tensor<1x1x1xf32>} : () -> tensor<1x1x1xf32>
  %w = "nn.constant"() {value = dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]> : tensor<8xf32>} : () -> tensor<8xf32>
  %sq = "nn.pow"(%x, %two) : (tensor<1x4x8xf32>, tensor<f32>) -> tensor<1x4x8xf32>
  %m = "nn.reduce_mean"(%sq) {axes = array<i64: 2>, keep_dims = true} : (tensor<1x4x8xf32>) -> tensor<1x4x1xf32>
  %a = "nn.add"(%m, %eps) : (tensor<1x4x1xf32>, tensor<1x1x1xf32>) -> tensor<1x4x1xf32>
  %r = "nn.rsqrt"(%a) : (tensor<1x4x1xf32>) -> tensor<1x4x1xf32>
  %n = "nn.mul"(%x, %r) : (tensor<1x4x8xf32>, tensor<1x4x1xf32>) -> tensor<1x4x8xf32>
  %y = "nn.mul"(%n, %w) : (tensor<1x4x8xf32>, tensor<8xf32>) -> tensor<1x4x8xf32>
  return %y : tensor<1x4x8xf32>
}

// x ** 7 by square-and-multiply: x2 = x*x, x4 = x2*x2, then x * x2 * x4 (four products).
// CHECK-LABEL: sym_name = "seventh"
// CHECK: ^bb0(%[[X:[^:]*]]:
// CHECK-NOT: "nn.pow"
// CHECK-DAG: %[[X2:.*]] = "nn.mul"(%[[X]], %[[X]])
// CHECK-DAG: %[[X3:.*]] = "nn.mul"(%[[X]], %[[X2]])
// CHECK-DAG: %[[X4:.*]] = "nn.mul"(%[[X2]], %[[X2]])
// CHECK: %[[X7:.*]] = "nn.mul"(%[[X3]], %[[X4]])
// CHECK-NEXT: "func.return"(%[[X7]])
func.func @seventh(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c = "nn.constant"() {value = dense<7.0> : tensor<1xf32>} : () -> tensor<1xf32>
  %p = "nn.pow"(%x, %c) : (tensor<4xf32>, tensor<1xf32>) -> tensor<4xf32>
  return %p : tensor<4xf32>
}

// -1, 0.5 and -0.5: a reciprocal, sqrt(x) + (+0.0) (pow(-0, 0.5) is +0), an rsqrt.
// CHECK-LABEL: sym_name = "roots"
// CHECK-NOT: "nn.pow"
// CHECK-DAG: "nn.reciprocal"
// CHECK-DAG: %[[S:.*]] = "nn.sqrt"
// CHECK-DAG: %[[Z:.*]] = "nn.constant"() {value = dense<0.000000e+00> : tensor<1xf32>}
// CHECK-DAG: "nn.add"(%[[S]], %[[Z]])
// CHECK-DAG: "nn.rsqrt"
func.func @roots(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %m1 = "nn.constant"() {value = dense<-1.0> : tensor<f32>} : () -> tensor<f32>
  %h = "nn.constant"() {value = dense<0.5> : tensor<f32>} : () -> tensor<f32>
  %mh = "nn.constant"() {value = dense<-0.5> : tensor<f32>} : () -> tensor<f32>
  %a = "nn.pow"(%x, %m1) : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %b = "nn.pow"(%x, %h) : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %c = "nn.pow"(%x, %mh) : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return %a, %b, %c : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// Exponents that stay: non-integer, negative integer (1/x**2 overflows where x**-2 does not),
// beyond 8, several values, and one that broadcasts the base to a larger shape.
// CHECK-LABEL: sym_name = "stays"
// CHECK-COUNT-5: "nn.pow"
func.func @stays(%x: tensor<4xf32>, %s: tensor<1xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2x4xf32>) {
  %a = "nn.constant"() {value = dense<2.5> : tensor<f32>} : () -> tensor<f32>
  %b = "nn.constant"() {value = dense<-2.0> : tensor<f32>} : () -> tensor<f32>
  %c = "nn.constant"() {value = dense<9.0> : tensor<f32>} : () -> tensor<f32>
  %d = "nn.constant"() {value = dense<[2.0, 3.0, 2.0, 2.0]> : tensor<4xf32>} : () -> tensor<4xf32>
  %e = "nn.constant"() {value = dense<2.0> : tensor<2x4xf32>} : () -> tensor<2x4xf32>
  %pa = "nn.pow"(%x, %a) : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %pb = "nn.pow"(%x, %b) : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %pc = "nn.pow"(%x, %c) : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %pd = "nn.pow"(%x, %d) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %pe = "nn.pow"(%x, %e) : (tensor<4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  return %pa, %pb, %pc, %pd, %pe : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2x4xf32>
}
