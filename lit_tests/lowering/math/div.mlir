// RUN: %nn2tosa opt %s --passes=lower-to-tosa,cse,dce | %FileCheck %s

// Float division: x * reciprocal(y), the divisor reshaped to the dividend's rank; both scaled by
// 2^64 / 2^-64 first where |y| < 2^-100 / > 2^100 (1/y would leave the normal range).
// CHECK-LABEL: sym_name = "div_f32"
// CHECK: ^bb0(%[[X:[^:]*]]: tensor<2x3xf32>{{.*}}, %[[Y:[^:]*]]: tensor<3xf32>
// CHECK: "tosa.abs"(%[[Y]])
// CHECK: "tosa.const"() <{values = dense<7.88860905E-31> : tensor<1x1xf32>}>
// CHECK: "tosa.const"() <{values = dense<1.84467441E+19> : tensor<1x1xf32>}>
// CHECK: %[[S:.*]] = "tosa.select"
// CHECK: %[[XS:.*]] = "tosa.mul"(%[[X]], %[[S]], %{{.*}})
// CHECK: %[[Y2:.*]] = "tosa.reshape"(%[[Y]], %{{.*}}) : (tensor<3xf32>, !tosa.shape<2>) -> tensor<1x3xf32>
// CHECK: %[[YS:.*]] = "tosa.mul"(%[[Y2]], %[[S]], %{{.*}})
// CHECK: %[[R:.*]] = "tosa.reciprocal"(%[[YS]])
// CHECK: %[[Q:.*]] = "tosa.mul"(%[[XS]], %[[R]], %{{.*}})
// CHECK: "func.return"(%[[Q]])
func.func @div_f32(%x: tensor<2x3xf32>, %y: tensor<3xf32>) -> tensor<2x3xf32> {
  %a = "nn.div"(%x, %y) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return %a : tensor<2x3xf32>
}

// Integer division truncates: TOSA INTDIV on i32, i8 operands widened and the result narrowed.
// CHECK-LABEL: sym_name = "div_i8"
// CHECK: "tosa.cast"{{.*}} -> tensor<4xi32>
// CHECK: %[[D:.*]] = "tosa.intdiv"({{.*}}) : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
// CHECK: %[[N:.*]] = "tosa.cast"(%[[D]]) : (tensor<4xi32>) -> tensor<4xi8>
// CHECK: "func.return"(%[[N]])
func.func @div_i8(%x: tensor<4xi8>, %y: tensor<4xi8>) -> tensor<4xi8> {
  %a = "nn.div"(%x, %y) : (tensor<4xi8>, tensor<4xi8>) -> tensor<4xi8>
  return %a : tensor<4xi8>
}

// Unsigned operands are zero-extended (bitwise_and 255 after the sign-extending cast).
// CHECK-LABEL: sym_name = "div_ui8"
// CHECK: "tosa.const"() <{values = dense<255> : tensor<1xi32>}>
// CHECK: "tosa.bitwise_and"
// CHECK: "tosa.intdiv"
func.func @div_ui8(%x: tensor<4xui8>, %y: tensor<4xui8>) -> tensor<4xui8> {
  %a = "nn.div"(%x, %y) : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  return %a : tensor<4xui8>
}
