// RUN: %not %nn2tosa opt %s --passes=legalize-mps 2>&1 | %FileCheck %s

// A node whose fields contradict its declared shapes is invalid input (exit 2), named by its location.
// CHECK: nn2tosa: error: {{.*}}node 0 (MPSView): cannot reshape [2, 3] to the declared [4, 2]
func.func @main(%x: tensor<2x3xf32>) -> tensor<4x2xf32> {
  %0 = "mps.View"(%x) {num_dims = 2 : i32, shape = array<i32: 4, 2>} : (tensor<2x3xf32>) -> tensor<4x2xf32> loc("node 0"("MPSView"))
  return %0 : tensor<4x2xf32>
}
