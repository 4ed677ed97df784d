// RUN: %nn2tosa opt %s --passes=canonicalize | %FileCheck %s

// A quantized zero pad (real 0.0 is the input zero point, -1) before a convolution: TOSA's
// convolution padding adds (zp - zp) * w = 0 too, so the pad becomes the conv's own padding.
// CHECK-LABEL: sym_name = "conv_zero_point"
// CHECK-NOT: "nn.pad"
// CHECK: "nn.conv2d"(%arg{{[0-9]+}}, {{.*}}pad = array<i64: 4, 3, 3, 3>
func.func @conv_zero_point(%x: tensor<1x8x8x3x!quant.uniform<i8:f32, 0.0078:-1>>) -> tensor<1x5x4x4x!quant.uniform<i8:f32, 0.05:3>> {
  %w = "nn.constant"() {value = dense<1> : tensor<4x7x7x3xi8>} : () -> tensor<4x7x7x3x!quant.uniform<i8:f32, 0.002>>
  %p = "nn.pad"(%x) {mode = "constant", pads = array<i64: 0, 0, 3, 3, 3, 3, 0, 0>, value = 0.0 : f64} : (tensor<1x8x8x3x!quant.uniform<i8:f32, 0.0078:-1>>) -> tensor<1x14x14x3x!quant.uniform<i8:f32, 0.0078:-1>>
  %y = "nn.conv2d"(%p, %w) {dilation = array<i64: 1, 1>, groups = 1 : i64, pad = array<i64: 1, 0, 0, 0>, stride = array<i64: 2, 2>} : (tensor<1x14x14x3x!quant.uniform<i8:f32, 0.0078:-1>>, tensor<4x7x7x3x!quant.uniform<i8:f32, 0.002>>) -> tensor<1x5x4x4x!quant.uniform<i8:f32, 0.05:3>>
  return %y : tensor<1x5x4x4x!quant.uniform<i8:f32, 0.05:3>>
}

// A float zero pad before a depthwise convolution folds likewise.
// CHECK-LABEL: sym_name = "depthwise_float"
// CHECK-NOT: "nn.pad"
// CHECK: "nn.depthwise_conv2d"(%arg{{[0-9]+}}, {{.*}}pad = array<i64: 1, 1, 1, 1>
func.func @depthwise_float(%x: tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32> {
  %w = "nn.constant"() {value = dense<0.5> : tensor<3x3x2x1xf32>} : () -> tensor<3x3x2x1xf32>
  %p = "nn.pad"(%x) {mode = "constant", pads = array<i64: 0, 0, 1, 1, 1, 1, 0, 0>, value = 0.0 : f64} : (tensor<1x4x4x2xf32>) -> tensor<1x6x6x2xf32>
  %y = "nn.depthwise_conv2d"(%p, %w) {dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x6x6x2xf32>, tensor<3x3x2x1xf32>) -> tensor<1x4x4x2xf32>
  return %y : tensor<1x4x4x2xf32>
}

// A fill other than the zero point would be read by the convolution: the pad stays.
// CHECK-LABEL: sym_name = "conv_other_fill"
// CHECK: "nn.pad"
// CHECK: "nn.conv2d"({{.*}}pad = array<i64: 0, 0, 0, 0>
func.func @conv_other_fill(%x: tensor<1x4x4x1xf32>) -> tensor<1x4x4x1xf32> {
  %w = "nn.constant"() {value = dense<1.0> : tensor<1x3x3x1xf32>} : () -> tensor<1x3x3x1xf32>
  %p = "nn.pad"(%x) {mode = "constant", pads = array<i64: 0, 0, 1, 1, 1, 1, 0, 0>, value = 1.0 : f64} : (tensor<1x4x4x1xf32>) -> tensor<1x6x6x1xf32>
  %y = "nn.conv2d"(%p, %w) {dilation = array<i64: 1, 1>, groups = 1 : i64, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x6x6x1xf32>, tensor<1x3x3x1xf32>) -> tensor<1x4x4x1xf32>
  return %y : tensor<1x4x4x1xf32>
}

// ResNet's pool1_pad: real 0.0 after a relu is the zero point -128, the int8 minimum, which never
// wins a max: MAX_POOL2D's own padding (padding below the kernel: every window keeps a real element).
// CHECK-LABEL: sym_name = "max_pool_lowest"
// CHECK-NOT: "nn.pad"
// CHECK: "nn.max_pool2d"(%arg{{[0-9]+}}) {{.*}}pad = array<i64: 1, 1, 1, 1>
func.func @max_pool_lowest(%x: tensor<1x8x8x4x!quant.uniform<i8:f32, 0.02:-128>>) -> tensor<1x4x4x4x!quant.uniform<i8:f32, 0.02:-128>> {
  %p = "nn.pad"(%x) {mode = "constant", pads = array<i64: 0, 0, 1, 1, 1, 1, 0, 0>, value = 0.0 : f64} : (tensor<1x8x8x4x!quant.uniform<i8:f32, 0.02:-128>>) -> tensor<1x10x10x4x!quant.uniform<i8:f32, 0.02:-128>>
  %y = "nn.max_pool2d"(%p) {dilation = array<i64: 1, 1>, kernel = array<i64: 3, 3>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 2, 2>} : (tensor<1x10x10x4x!quant.uniform<i8:f32, 0.02:-128>>) -> tensor<1x4x4x4x!quant.uniform<i8:f32, 0.02:-128>>
  return %y : tensor<1x4x4x4x!quant.uniform<i8:f32, 0.02:-128>>
}

// A float zero pad after relu (clamp(0, inf)): no element is below the fill, so it never wins either.
// CHECK-LABEL: sym_name = "max_pool_after_relu"
// CHECK: %[[R:.*]] = "nn.clamp"
// CHECK-NOT: "nn.pad"
// CHECK: "nn.max_pool2d"(%[[R]]) {{.*}}pad = array<i64: 1, 1, 1, 1>
func.func @max_pool_after_relu(%x: tensor<1x8x8x4xf32>) -> tensor<1x4x4x4xf32> {
  %r = "nn.relu"(%x) : (tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
  %p = "nn.pad"(%r) {mode = "constant", pads = array<i64: 0, 0, 1, 1, 1, 1, 0, 0>, value = 0.0 : f64} : (tensor<1x8x8x4xf32>) -> tensor<1x10x10x4xf32>
  %y = "nn.max_pool2d"(%p) {dilation = array<i64: 1, 1>, kernel = array<i64: 3, 3>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 2, 2>} : (tensor<1x10x10x4xf32>) -> tensor<1x4x4x4xf32>
  return %y : tensor<1x4x4x4xf32>
}

// A float zero pad of an unbounded input could win the max (all-negative windows): it stays.
// CHECK-LABEL: sym_name = "max_pool_unbounded"
// CHECK: "nn.pad"
// CHECK: "nn.max_pool2d"({{.*}}pad = array<i64: 0, 0, 0, 0>
func.func @max_pool_unbounded(%x: tensor<1x8x8x4xf32>) -> tensor<1x4x4x4xf32> {
  %p = "nn.pad"(%x) {mode = "constant", pads = array<i64: 0, 0, 1, 1, 1, 1, 0, 0>, value = 0.0 : f64} : (tensor<1x8x8x4xf32>) -> tensor<1x10x10x4xf32>
  %y = "nn.max_pool2d"(%p) {dilation = array<i64: 1, 1>, kernel = array<i64: 3, 3>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 2, 2>} : (tensor<1x10x10x4xf32>) -> tensor<1x4x4x4xf32>
  return %y : tensor<1x4x4x4xf32>
}

// Padding that would reach the kernel size (3 + 0 >= 3) stays explicit, as do pads of the batch or
// channel dimension and pads before an average pool (the padding it counts is explicit again at
// lowering).
// CHECK-LABEL: sym_name = "not_folded"
// CHECK-COUNT-3: "nn.pad"
func.func @not_folded(%x: tensor<1x8x8x4x!quant.uniform<i8:f32, 0.02:-128>>) -> (tensor<1x5x5x4x!quant.uniform<i8:f32, 0.02:-128>>, tensor<1x6x6x6x!quant.uniform<i8:f32, 0.02:-128>>, tensor<1x8x8x4x!quant.uniform<i8:f32, 0.02:-128>>) {
  %p = "nn.pad"(%x) {mode = "constant", pads = array<i64: 0, 0, 3, 0, 3, 0, 0, 0>, value = 0.0 : f64} : (tensor<1x8x8x4x!quant.uniform<i8:f32, 0.02:-128>>) -> tensor<1x11x11x4x!quant.uniform<i8:f32, 0.02:-128>>
  %y = "nn.max_pool2d"(%p) {dilation = array<i64: 1, 1>, kernel = array<i64: 3, 3>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 2, 2>} : (tensor<1x11x11x4x!quant.uniform<i8:f32, 0.02:-128>>) -> tensor<1x5x5x4x!quant.uniform<i8:f32, 0.02:-128>>
  %c = "nn.pad"(%x) {mode = "constant", pads = array<i64: 0, 0, 0, 0, 0, 0, 1, 1>, value = 0.0 : f64} : (tensor<1x8x8x4x!quant.uniform<i8:f32, 0.02:-128>>) -> tensor<1x8x8x6x!quant.uniform<i8:f32, 0.02:-128>>
  %z = "nn.max_pool2d"(%c) {dilation = array<i64: 1, 1>, kernel = array<i64: 3, 3>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x8x8x6x!quant.uniform<i8:f32, 0.02:-128>>) -> tensor<1x6x6x6x!quant.uniform<i8:f32, 0.02:-128>>
  %a = "nn.pad"(%x) {mode = "constant", pads = array<i64: 0, 0, 1, 1, 1, 1, 0, 0>, value = 0.0 : f64} : (tensor<1x8x8x4x!quant.uniform<i8:f32, 0.02:-128>>) -> tensor<1x10x10x4x!quant.uniform<i8:f32, 0.02:-128>>
  %v = "nn.avg_pool2d"(%a) {count_pad = array<i64: 0, 0, 0, 0>, divisor = 0 : i64, kernel = array<i64: 3, 3>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x10x10x4x!quant.uniform<i8:f32, 0.02:-128>>) -> tensor<1x8x8x4x!quant.uniform<i8:f32, 0.02:-128>>
  return %y, %z, %v : tensor<1x5x5x4x!quant.uniform<i8:f32, 0.02:-128>>, tensor<1x6x6x6x!quant.uniform<i8:f32, 0.02:-128>>, tensor<1x8x8x4x!quant.uniform<i8:f32, 0.02:-128>>
}
