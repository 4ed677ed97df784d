// RUN: %not %nn2tosa opt %s --passes=lower-to-tosa 2>&1 | %FileCheck %s

// Integer data (no quantization) has no TOSA convolution; quantized convolutions are not lowered
// yet. Both are reported, with their locations, in one error.
// CHECK: 2 unsupported constructs
// CHECK-DAG: int_conv (nn.conv2d): conv2d on i32 tensors: TOSA computes it on floats (or quantized data) only
// CHECK-DAG: quantized_conv (nn.depthwise_conv2d): quantized depthwise_conv2d is not lowered yet
func.func @main(%x: tensor<1x3x3x2xi32>, %q: tensor<1x3x3x2x!quant.uniform<i8:f32, 0.5:3>>) -> (tensor<1x3x3x2xi32>, tensor<1x3x3x2x!quant.uniform<i8:f32, 0.25:1>>) {
  %w = "nn.constant"() {value = dense<1> : tensor<2x1x1x2xi32>} : () -> tensor<2x1x1x2xi32>
  %y = "nn.conv2d"(%x, %w) {stride = array<i64: 1, 1>, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, groups = 1 : i64} : (tensor<1x3x3x2xi32>, tensor<2x1x1x2xi32>) -> tensor<1x3x3x2xi32> loc("int_conv")
  %qw = "nn.constant"() {value = dense<1> : tensor<1x1x2x1xi8>} : () -> tensor<1x1x2x1x!quant.uniform<i8:f32, 0.5>>
  %z = "nn.depthwise_conv2d"(%q, %qw) {stride = array<i64: 1, 1>, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>} : (tensor<1x3x3x2x!quant.uniform<i8:f32, 0.5:3>>, tensor<1x1x2x1x!quant.uniform<i8:f32, 0.5>>) -> tensor<1x3x3x2x!quant.uniform<i8:f32, 0.25:1>> loc("quantized_conv")
  return %y, %z : tensor<1x3x3x2xi32>, tensor<1x3x3x2x!quant.uniform<i8:f32, 0.25:1>>
}
