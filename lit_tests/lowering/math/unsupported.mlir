// RUN: %not %nn2tosa opt %s --passes=lower-to-tosa 2>&1 | %FileCheck %s

// What the math rules cannot lower is reported, every op at once, with the reason.
// CHECK: 3 unsupported constructs
// CHECK-DAG: nn.leaky_relu): leaky_relu of i32 tensors (floating point only)
// CHECK-DAG: nn.gelu): gelu approximation 'sigmoid' (known: 'none', 'tanh')
// CHECK-DAG: nn.div): integer division of ui32 tensors (TOSA's widest integer is i32, signed)
func.func @unsupported(%x: tensor<4xi32>, %f: tensor<4xf32>, %u: tensor<4xui32>) -> (tensor<4xi32>, tensor<4xf32>, tensor<4xui32>) {
  %a = "nn.leaky_relu"(%x) {alpha = 0.1 : f64} : (tensor<4xi32>) -> tensor<4xi32>
  %b = "nn.gelu"(%f) {approximate = "sigmoid"} : (tensor<4xf32>) -> tensor<4xf32>
  %c = "nn.div"(%u, %u) : (tensor<4xui32>, tensor<4xui32>) -> tensor<4xui32>
  return %a, %b, %c : tensor<4xi32>, tensor<4xf32>, tensor<4xui32>
}
