// RUN: %not %nn2tosa opt %s --passes=dce 2>&1 | %FileCheck %s
// RUN: %nn2tosa opt %s --no-verify-each --passes=dce | %FileCheck %s --check-prefix=UNCHECKED

// A wrong declared result type in the input is an input error (exit 2), not something a pass
// silently rewrites.
// CHECK: nn2tosa: error: {{.*}}opt_verifies_input.mlir: the IR does not verify: nn.add {{.*}} result #0 is tensor<3xf32>, expected f32 of shape [2]
// UNCHECKED: "nn.add"
func.func @main(%x: tensor<2xf32>) -> tensor<3xf32> {
  %a = "nn.add"(%x, %x) : (tensor<2xf32>, tensor<2xf32>) -> tensor<3xf32>
  return %a : tensor<3xf32>
}
