// RUN: %nn2tosa opt %s --passes=lower-to-tosa,cse,dce | %FileCheck %s

// nn's depthwise weights [KH, KW, C, M] are TOSA's: DEPTHWISE_CONV2D as it is, with its bias,
// asymmetric padding and dilation.
// CHECK-LABEL: sym_name = "depthwise"
// CHECK: ^bb0(%[[X:[^:]*]]:
// CHECK-DAG: %[[W:.*]] = "tosa.const"() <{values = dense<2.000000e+00> : tensor<2x3x2x3xf32>}>
// CHECK-DAG: %[[B:.*]] = "tosa.const"() <{values = dense<5.000000e-01> : tensor<6xf32>}>
// CHECK-DAG: %[[Z:.*]] = "tosa.const"() <{values = dense<0.000000e+00> : tensor<1xf32>}>
// CHECK: %[[Y:.*]] = "tosa.depthwise_conv2d"(%[[X]], %[[W]], %[[B]], %[[Z]], %[[Z]]) <{acc_type = f32, dilation = array<i64: 2, 1>, pad = array<i64: 1, 0, 0, 2>, stride = array<i64: 1, 2>}> : ({{.*}}) -> tensor<1x5x3x6xf32>
// CHECK: "func.return"(%[[Y]])
func.func @depthwise(%x: tensor<1x6x5x2xf32>) -> tensor<1x5x3x6xf32> {
  %w = "nn.constant"() {value = dense<2.0> : tensor<2x3x2x3xf32>} : () -> tensor<2x3x2x3xf32>
  %b = "nn.constant"() {value = dense<0.5> : tensor<6xf32>} : () -> tensor<6xf32>
  %y = "nn.depthwise_conv2d"(%x, %w, %b) {stride = array<i64: 1, 2>, dilation = array<i64: 2, 1>, pad = array<i64: 1, 0, 0, 2>} : (tensor<1x6x5x2xf32>, tensor<2x3x2x3xf32>, tensor<6xf32>) -> tensor<1x5x3x6xf32>
  return %y : tensor<1x5x3x6xf32>
}

// bf16: f32 accumulator (BF16 extension), bf16 result.
// CHECK-LABEL: sym_name = "bf16"
// CHECK: "tosa.depthwise_conv2d"({{.*}}) <{acc_type = f32, {{.*}}}> : (tensor<1x3x3x1xbf16>, tensor<3x3x1x1xbf16>, tensor<1xbf16>, tensor<1xbf16>, tensor<1xbf16>) -> tensor<1x1x1x1xbf16>
func.func @bf16(%x: tensor<1x3x3x1xbf16>) -> tensor<1x1x1x1xbf16> {
  %w = "nn.constant"() {value = dense<1.0> : tensor<3x3x1x1xbf16>} : () -> tensor<3x3x1x1xbf16>
  %y = "nn.depthwise_conv2d"(%x, %w) {stride = array<i64: 1, 1>, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>} : (tensor<1x3x3x1xbf16>, tensor<3x3x1x1xbf16>) -> tensor<1x1x1x1xbf16>
  return %y : tensor<1x1x1x1xbf16>
}
