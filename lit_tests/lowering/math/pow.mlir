// RUN: %nn2tosa opt %s --passes=lower-to-tosa,cse,dce | %FileCheck %s

// TOSA POW sees only finite |x| > 0 and finite y (selects feed it 1 elsewhere); the special values
// and the sign of odd integer powers of negative bases are selected around it.
// CHECK-LABEL: sym_name = "pow"
// CHECK: ^bb0(%[[X:[^:]*]]: tensor<4xf32>{{.*}}, %[[Y:[^:]*]]: tensor<4xf32>
// CHECK: %[[AX:.*]] = "tosa.abs"(%[[X]])
// CHECK: %[[BASE:.*]] = "tosa.select"(%[[OK:[^,]*]], %[[AX]], %[[ONE:[^)]*]])
// CHECK: %[[EXP:.*]] = "tosa.select"(%[[OK]], %[[Y]], %[[ONE]])
// CHECK: "tosa.pow"(%[[BASE]], %[[EXP]])
// CHECK: "tosa.floor"(%[[Y]])
// CHECK: "tosa.negate"
// CHECK: "tosa.const"() <{values = dense<0x7FC00000> : tensor<1xf32>}>
// CHECK: "func.return"
func.func @pow(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %a = "nn.pow"(%x, %y) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %a : tensor<4xf32>
}

// Integer powers: repeated squaring in i32, one step per bit of the exponent (2 for a constant 3).
// CHECK-LABEL: sym_name = "pow_i32_cube"
// CHECK-NOT: "tosa.pow"
// CHECK: "tosa.arithmetic_right_shift"
// CHECK: %[[SQ:.*]] = "tosa.mul"(%[[X:[^,]*]], %[[X]], %{{.*}})
// CHECK: "tosa.mul"(%{{.*}}, %[[SQ]], %{{.*}})
// CHECK-NOT: "tosa.mul"(%[[SQ]], %[[SQ]]
// CHECK: "func.return"
func.func @pow_i32_cube(%x: tensor<4xi32>) -> tensor<4xi32> {
  %c = "nn.constant"() {value = dense<3> : tensor<1xi32>} : () -> tensor<1xi32>
  %a = "nn.pow"(%x, %c) : (tensor<4xi32>, tensor<1xi32>) -> tensor<4xi32>
  return %a : tensor<4xi32>
}
