// RUN: %not %nn2tosa opt %s --passes=dce 2>&1 | %FileCheck %s

// The IR verifier holds TOSA-level graphs to TOSA 1.0's operand forms: a zero point is a
// tosa.const operand (MLIR itself only checks that in tosa-validate).
// CHECK: nn2tosa: error:
// CHECK-SAME: tosa.negate
// CHECK-SAME: operand #1 must be produced by tosa.const, not graph.input
func.func @main(%x: tensor<4xi8>, %zp: tensor<1xi8>) -> tensor<4xi8> {
  %z = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %n = "tosa.negate"(%x, %zp, %z) : (tensor<4xi8>, tensor<1xi8>, tensor<1xi8>) -> tensor<4xi8>
  return %n : tensor<4xi8>
}
