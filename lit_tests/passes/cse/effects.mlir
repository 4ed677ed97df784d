// RUN: %nn2tosa opt %s --passes=cse | %FileCheck %s

// Two identical custom operators are two calls (tosa.custom declares unknown effects): both stay,
// while the identical pure ops after them merge.
// CHECK-LABEL: sym_name = "main"
// CHECK: %[[A:.*]] = "tosa.custom"(%arg0)
// CHECK-NEXT: %[[B:.*]] = "tosa.custom"(%arg0)
// CHECK-NEXT: %[[S:.*]] = "tosa.add"(%[[A]], %[[B]])
// CHECK-NOT: tosa.add
// CHECK: "func.return"(%[[S]], %[[S]])
func.func @main(%x: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
  %0 = "tosa.custom"(%x) {operator_name = "log", domain_name = "acme", implementation_attrs = ""} : (tensor<2xf32>) -> tensor<2xf32>
  %1 = "tosa.custom"(%x) {operator_name = "log", domain_name = "acme", implementation_attrs = ""} : (tensor<2xf32>) -> tensor<2xf32>
  %2 = "tosa.add"(%0, %1) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %3 = "tosa.add"(%0, %1) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %2, %3 : tensor<2xf32>, tensor<2xf32>
}
