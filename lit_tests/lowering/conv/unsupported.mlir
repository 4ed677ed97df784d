// RUN: %not %nn2tosa opt %s --passes=lower-to-tosa 2>&1 | %FileCheck %s

// Integer data without quantization has no TOSA convolution (quantized data has its own rules):
// every such op is reported, with its location, in one error.
// CHECK: 2 unsupported constructs
// CHECK-DAG: int_conv (nn.conv2d): conv2d on i32 tensors: TOSA computes it on floats (or quantized data) only
// CHECK-DAG: int_transposed (nn.transpose_conv2d): transpose_conv2d on i8 tensors: TOSA computes it on floats (or quantized data) only
func.func @main(%x: tensor<1x3x3x2xi32>, %q: tensor<1x3x3x2xi8>) -> (tensor<1x3x3x2xi32>, tensor<1x3x3x2xi8>) {
  %w = "nn.constant"() {value = dense<1> : tensor<2x1x1x2xi32>} : () -> tensor<2x1x1x2xi32>
  %y = "nn.conv2d"(%x, %w) {stride = array<i64: 1, 1>, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, groups = 1 : i64} : (tensor<1x3x3x2xi32>, tensor<2x1x1x2xi32>) -> tensor<1x3x3x2xi32> loc("int_conv")
  %qw = "nn.constant"() {value = dense<1> : tensor<2x1x1x2xi8>} : () -> tensor<2x1x1x2xi8>
  %z = "nn.transpose_conv2d"(%q, %qw) {stride = array<i64: 1, 1>, out_pad = array<i64: 0, 0, 0, 0>} : (tensor<1x3x3x2xi8>, tensor<2x1x1x2xi8>) -> tensor<1x3x3x2xi8> loc("int_transposed")
  return %y, %z : tensor<1x3x3x2xi32>, tensor<1x3x3x2xi8>
}
