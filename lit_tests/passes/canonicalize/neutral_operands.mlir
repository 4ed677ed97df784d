// RUN: %nn2tosa opt %s --passes=canonicalize | %FileCheck %s

// x * 1, 1 * x, x / 1, x - (+0.0) and x + (-0.0) are x, bit for bit.
// CHECK-LABEL: sym_name = "neutral"
// CHECK: ^bb0(%[[X:[^:]*]]:
// CHECK-NOT: "nn.
// CHECK: "func.return"(%[[X]])
func.func @neutral(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %one = "nn.constant"() {value = dense<1.0> : tensor<3xf32>} : () -> tensor<3xf32>
  %zero = "nn.constant"() {value = dense<0.0> : tensor<1xf32>} : () -> tensor<1xf32>
  %negzero = "nn.constant"() {value = dense<-0.0> : tensor<f32>} : () -> tensor<f32>
  %a = "nn.mul"(%x, %one) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %b = "nn.mul"(%one, %a) : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %c = "nn.div"(%b, %one) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %d = "nn.sub"(%c, %zero) : (tensor<2x3xf32>, tensor<1xf32>) -> tensor<2x3xf32>
  %e = "nn.add"(%negzero, %d) : (tensor<f32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %e : tensor<2x3xf32>
}

// x + (+0.0) turns -0.0 into +0.0, so it stays; so does a multiplication that broadcasts x.
// CHECK-LABEL: sym_name = "not_neutral"
// CHECK: "nn.add"
// CHECK: "nn.mul"
func.func @not_neutral(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<2x3xf32>) {
  %zero = "nn.constant"() {value = dense<0.0> : tensor<3xf32>} : () -> tensor<3xf32>
  %ones = "nn.constant"() {value = dense<1.0> : tensor<2x3xf32>} : () -> tensor<2x3xf32>
  %a = "nn.add"(%x, %zero) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %b = "nn.mul"(%x, %ones) : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %a, %b : tensor<3xf32>, tensor<2x3xf32>
}

// Integer zero is neutral for add.
// CHECK-LABEL: sym_name = "integer"
// CHECK: ^bb0(%[[X:[^:]*]]:
// CHECK-NOT: "nn.add"
// CHECK: "func.return"(%[[X]])
func.func @integer(%x: tensor<3xi32>) -> tensor<3xi32> {
  %zero = "nn.constant"() {value = dense<0> : tensor<3xi32>} : () -> tensor<3xi32>
  %a = "nn.add"(%x, %zero) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
  return %a : tensor<3xi32>
}
