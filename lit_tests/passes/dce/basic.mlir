// RUN: %nn2tosa opt %s --passes=dce | %FileCheck %s

// Dead ops go, including chains that only fed dead ops; graph inputs stay even when unused.
// CHECK-LABEL: "func.func"
// CHECK-SAME: sym_name = "main"
// CHECK: ^bb0(%[[X:.*]]: tensor<2xf32>{{.*}}, %[[UNUSED:.*]]: tensor<2xf32>
// CHECK-NOT: nn.neg
// CHECK: %[[M:.*]] = "nn.mul"(%[[X]], %[[X]])
// CHECK-NOT: nn.
// CHECK: "func.return"(%[[M]])
func.func @main(%x: tensor<2xf32>, %unused: tensor<2xf32>) -> tensor<2xf32> {
  %a = "nn.neg"(%x) : (tensor<2xf32>) -> tensor<2xf32>
  %b = "nn.neg"(%a) : (tensor<2xf32>) -> tensor<2xf32>
  %m = "nn.mul"(%x, %x) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %c = "nn.constant"() {value = dense<1.0> : tensor<2xf32>} : () -> tensor<2xf32>
  return %m : tensor<2xf32>
}
