// RUN: %nn2tosa opt %s --passes=dce | %FileCheck %s

// A custom operator may do anything (tosa.custom declares unknown effects): unused, it stays; the
// pure op beside it goes. (Variables: tests/passes/test_effects.py, from a .tosa tosa-opt writes.)
// CHECK-LABEL: sym_name = "main"
// CHECK: "tosa.custom"(%arg0) <{domain_name = "acme", implementation_attrs = "", operator_name = "log"}>
// CHECK-NOT: tosa.negate
// CHECK: "func.return"(%arg0)
func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  %zp = "tosa.const"() {values = dense<0.0> : tensor<1xf32>} : () -> tensor<1xf32>
  %0 = "tosa.custom"(%x) {operator_name = "log", domain_name = "acme", implementation_attrs = ""} : (tensor<2xf32>) -> tensor<2xf32>
  %1 = "tosa.negate"(%x, %zp, %zp) : (tensor<2xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2xf32>
  return %x : tensor<2xf32>
}
