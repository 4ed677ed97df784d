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
