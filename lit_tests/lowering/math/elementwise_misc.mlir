// RUN: %nn2tosa opt %s --passes=lower-to-tosa,cse,dce | %FileCheck %s

// squared_difference = d * d; on i8 in i32 (TOSA SUB has no i8 form), narrowed back.
// CHECK-LABEL: sym_name = "squared_difference"
// CHECK: %[[D:.*]] = "tosa.sub"
// CHECK: "tosa.mul"(%[[D]], %[[D]], %{{.*}})
// CHECK: "tosa.sub"{{.*}} -> tensor<4xi32>
// CHECK: "tosa.cast"{{.*}} -> tensor<4xi8>
func.func @squared_difference(%x: tensor<4xf32>, %y: tensor<4xf32>, %p: tensor<4xi8>, %q: tensor<4xi8>) -> (tensor<4xf32>, tensor<4xi8>) {
  %a = "nn.squared_difference"(%x, %y) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %b = "nn.squared_difference"(%p, %q) : (tensor<4xi8>, tensor<4xi8>) -> tensor<4xi8>
  return %a, %b : tensor<4xf32>, tensor<4xi8>
}

// square = x * x.
// CHECK-LABEL: sym_name = "square"
// CHECK: ^bb0(%[[X:[^:]*]]:
// CHECK: "tosa.mul"(%[[X]], %[[X]], %{{.*}})
func.func @square(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = "nn.square"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %a : tensor<4xf32>
}

// Shifts: left is logical; right is arithmetic for signed types, logical for unsigned ones.
// CHECK-LABEL: sym_name = "shifts"
// CHECK: "tosa.logical_left_shift"
// CHECK: "tosa.arithmetic_right_shift"{{.*}}<{round = false}>
// CHECK: "tosa.logical_right_shift"{{.*}} -> tensor<4xi8>
func.func @shifts(%x: tensor<4xi16>, %s: tensor<4xi16>, %u: tensor<4xui8>, %t: tensor<4xui8>) -> (tensor<4xi16>, tensor<4xi16>, tensor<4xui8>) {
  %a = "nn.shift_left"(%x, %s) : (tensor<4xi16>, tensor<4xi16>) -> tensor<4xi16>
  %b = "nn.shift_right"(%x, %s) : (tensor<4xi16>, tensor<4xi16>) -> tensor<4xi16>
  %c = "nn.shift_right"(%u, %t) : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  return %a, %b, %c : tensor<4xi16>, tensor<4xi16>, tensor<4xui8>
}

// sign keeps 0 and NaN (x itself where neither x > 0 nor x < 0); isnan = !(x == x);
// isinf = |x| == inf; integers are never NaN.
// CHECK-LABEL: sym_name = "sign_classify"
// CHECK: ^bb0(%[[X:[^:]*]]: tensor<4xf32>
// CHECK: "tosa.select"(%{{.*}}, %{{.*}}, %[[X]])
// CHECK: %[[E:.*]] = "tosa.equal"(%[[X]], %[[X]])
// CHECK: "tosa.logical_not"(%[[E]])
// CHECK: "tosa.equal"(%{{.*}}, %{{.*}}) : (tensor<4xf32>, tensor<1xf32>)
// CHECK: "tosa.const"() <{values = dense<false> : tensor<4xi1>}>
func.func @sign_classify(%x: tensor<4xf32>, %i: tensor<4xi32>) -> (tensor<4xf32>, tensor<4xi1>, tensor<4xi1>, tensor<4xi1>) {
  %a = "nn.sign"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %b = "nn.isnan"(%x) : (tensor<4xf32>) -> tensor<4xi1>
  %c = "nn.isinf"(%x) : (tensor<4xf32>) -> tensor<4xi1>
  %d = "nn.isnan"(%i) : (tensor<4xi32>) -> tensor<4xi1>
  return %a, %b, %c, %d : tensor<4xf32>, tensor<4xi1>, tensor<4xi1>, tensor<4xi1>
}

// select: all three operands brought to the result's rank.
// CHECK-LABEL: sym_name = "select"
// CHECK: "tosa.reshape"{{.*}} -> tensor<1x3xi1>
// CHECK: "tosa.reshape"{{.*}} -> tensor<1x1xf32>
// CHECK: "tosa.select"{{.*}} : (tensor<1x3xi1>, tensor<2x3xf32>, tensor<1x1xf32>) -> tensor<2x3xf32>
func.func @select(%c: tensor<3xi1>, %x: tensor<2x3xf32>, %y: tensor<1xf32>) -> tensor<2x3xf32> {
  %a = "nn.select"(%c, %x, %y) : (tensor<3xi1>, tensor<2x3xf32>, tensor<1xf32>) -> tensor<2x3xf32>
  return %a : tensor<2x3xf32>
}
