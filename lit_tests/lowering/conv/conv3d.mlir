// RUN: %nn2tosa opt %s --passes=lower-to-tosa,cse,dce | %FileCheck %s

// CONV3D as it is, except that (5 + 1 + 1 - 2) % 3 = 2 depth rows lie past the last window: one
// comes off the back padding, one off the input.
// CHECK-LABEL: sym_name = "conv3d"
// CHECK: ^bb0(%[[X:[^:]*]]:
// CHECK-DAG: %[[B:.*]] = "tosa.const"() <{values = dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>}>
// CHECK: %[[S:.*]] = "tosa.slice"(%[[X]], {{.*}}) -> tensor<1x4x3x4x3xf32>
// CHECK: %[[Y:.*]] = "tosa.conv3d"(%[[S]], %{{.*}}, %[[B]], %{{.*}}, %{{.*}}) <{acc_type = f32, dilation = array<i64: 1, 1, 2>, pad = array<i64: 1, 0, 0, 0, 1, 1>, stride = array<i64: 3, 1, 1>}> : (tensor<1x4x3x4x3xf32>, tensor<2x2x2x2x3xf32>, tensor<2xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x2x2x4x2xf32>
// CHECK: "func.return"(%[[Y]])
func.func @conv3d(%x: tensor<1x5x3x4x3xf32>) -> tensor<1x2x2x4x2xf32> {
  %w = "nn.constant"() {value = dense<1.0> : tensor<2x2x2x2x3xf32>} : () -> tensor<2x2x2x2x3xf32>
  %b = "nn.constant"() {value = dense<[1.0, 2.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %y = "nn.conv3d"(%x, %w, %b) {stride = array<i64: 3, 1, 1>, dilation = array<i64: 1, 1, 2>, pad = array<i64: 1, 1, 0, 0, 1, 1>} : (tensor<1x5x3x4x3xf32>, tensor<2x2x2x2x3xf32>, tensor<2xf32>) -> tensor<1x2x2x4x2xf32>
  return %y : tensor<1x2x2x4x2xf32>
}
