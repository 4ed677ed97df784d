// RUN: %nn2tosa opt %s --passes=legalize-mps --elide-constants | %FileCheck %s

// Layer nodes. NCHW stays NCHW: NHWC-only nn ops get a transpose on each side, OIHW weights a
// transpose (of a constant, which canonicalize folds) to nn's layout.

// CHECK-LABEL: sym_name = "conv"
// CHECK: ^bb0(%[[X:[^:]*]]:
// CHECK: %[[W:.*]] = "nn.constant"() {value = {{.*}} : tensor<4x3x3x3xf32>}
// CHECK: %[[XH:.*]] = "nn.transpose"(%[[X]]) {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x3x6x6xf32>) -> tensor<1x6x6x3xf32>
// CHECK-NEXT: %[[WH:.*]] = "nn.transpose"(%[[W]]) {perm = array<i64: 0, 2, 3, 1>}
// CHECK-NEXT: %[[C:.*]] = "nn.conv2d"(%[[XH]], %[[WH]], %{{.*}}) {dilation = array<i64: 2, 1>, groups = 1 : i64, pad = array<i64: 2, 2, 0, 1>, stride = array<i64: 1, 2>} : (tensor<1x6x6x3xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x6x3x4xf32>
// CHECK-NEXT: %[[Y:.*]] = "nn.transpose"(%[[C]]) {perm = array<i64: 0, 3, 1, 2>}
// Depthwise (weights [C*M, 1, KH, KW], groups = C): [C, M, KH, KW] -> [KH, KW, C, M].
// CHECK: %[[K:.*]] = "nn.reshape"(%{{.*}}) {shape = array<i64: 3, 2, 3, 3>}
// CHECK-NEXT: %[[KD:.*]] = "nn.transpose"(%[[K]]) {perm = array<i64: 2, 3, 0, 1>}
// CHECK-NEXT: %[[D:.*]] = "nn.depthwise_conv2d"(%{{.*}}, %[[KD]]) {{.*}} -> tensor<1x4x4x6xf32>
func.func @conv(%x: tensor<1x3x6x6xf32>) -> (tensor<1x4x6x3xf32>, tensor<1x6x4x4xf32>) {
  %w = "mps.constant"() {value = dense<0.5> : tensor<4x3x3x3xf32>} : () -> tensor<4x3x3x3xf32>
  %b = "mps.constant"() {value = dense<0.5> : tensor<4xf32>} : () -> tensor<4xf32>
  %0 = "mps.Conv2D"(%x, %w, %b) {dilation_x = 1 : i32, dilation_y = 2 : i32, groups = 1 : i32, operandSegmentSizes = array<i32: 1, 1, 1>, padding_bottom = 2 : i32, padding_left = 0 : i32, padding_right = 1 : i32, padding_top = 2 : i32, stride_x = 2 : i32, stride_y = 1 : i32} : (tensor<1x3x6x6xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x6x3xf32>
  %dw = "mps.constant"() {value = dense<0.5> : tensor<6x1x3x3xf32>} : () -> tensor<6x1x3x3xf32>
  %1 = "mps.DepthwiseConv2D"(%x, %dw) {dilation_x = 1 : i32, dilation_y = 1 : i32, groups = 3 : i32, operandSegmentSizes = array<i32: 1, 1, 0>, padding_bottom = 0 : i32, padding_left = 0 : i32, padding_right = 0 : i32, padding_top = 0 : i32, stride_x = 1 : i32, stride_y = 1 : i32} : (tensor<1x3x6x6xf32>, tensor<6x1x3x3xf32>) -> tensor<1x6x4x4xf32>
  return %0, %1 : tensor<1x4x6x3xf32>, tensor<1x6x4x4xf32>
}

// conv1d: weights [O, I, K] run as a conv2d of height 1. A ConvTranspose1d/2d the backend wrote as
// MPSConv2D ([Cin, Cout, K..] weights that do not fit forward; the declared result is the transposed
// one's) becomes nn.transpose_conv2d; output_padding comes from the declared result.
// CHECK-LABEL: sym_name = "conv_1d_and_transposed"
// CHECK: ^bb0(%[[X:[^:]*]]:
// CHECK: %[[X4:.*]] = "nn.reshape"(%[[X]]) {shape = array<i64: 1, 3, 1, 10>}
// CHECK: "nn.conv2d"({{.*}}) {dilation = array<i64: 1, 1>, groups = 1 : i64, pad = array<i64: 0, 0, 1, 1>, stride = array<i64: 1, 2>}
// CHECK: %[[Y1:.*]] = "nn.reshape"(%{{.*}}) {shape = array<i64: 1, 4, 5>}
// CHECK: %[[WT:.*]] = "nn.transpose"(%{{.*}}) {perm = array<i64: 1, 2, 3, 0>} : (tensor<3x2x1x3xf32>) -> tensor<2x1x3x3xf32>
// CHECK-NEXT: %[[T:.*]] = "nn.transpose_conv2d"(%{{.*}}, %[[WT]]) {out_pad = array<i64: 0, 0, -1, 0>, stride = array<i64: 1, 2>} : (tensor<1x1x10x3xf32>, tensor<2x1x3x3xf32>) -> tensor<1x1x20x2xf32>
func.func @conv_1d_and_transposed(%x: tensor<1x3x10xf32>) -> (tensor<1x4x5xf32>, tensor<1x2x20xf32>) {
  %w = "mps.constant"() {value = dense<0.5> : tensor<4x3x3xf32>} : () -> tensor<4x3x3xf32>
  %0 = "mps.Conv2D"(%x, %w) {dilation_x = 1 : i32, dilation_y = 1 : i32, groups = 1 : i32, operandSegmentSizes = array<i32: 1, 1, 0>, padding_bottom = 0 : i32, padding_left = 1 : i32, padding_right = 1 : i32, padding_top = 0 : i32, stride_x = 2 : i32, stride_y = 1 : i32} : (tensor<1x3x10xf32>, tensor<4x3x3xf32>) -> tensor<1x4x5xf32>
  %t = "mps.constant"() {value = dense<0.5> : tensor<3x2x3xf32>} : () -> tensor<3x2x3xf32>
  %1 = "mps.Conv2D"(%x, %t) {dilation_x = 1 : i32, dilation_y = 1 : i32, groups = 1 : i32, operandSegmentSizes = array<i32: 1, 1, 0>, padding_bottom = 0 : i32, padding_left = 1 : i32, padding_right = 1 : i32, padding_top = 0 : i32, stride_x = 2 : i32, stride_y = 1 : i32} : (tensor<1x3x10xf32>, tensor<3x2x3xf32>) -> tensor<1x2x20xf32>
  return %0, %1 : tensor<1x4x5xf32>, tensor<1x2x20xf32>
}

// Pooling: nn's after-padding is what the declared output needs (here ceil_mode's overhang); avg
// pool counts only PyTorch's own padding (the backend records padding * stride after, under
// ceil_mode); divisor_override is the divisor.
// CHECK-LABEL: sym_name = "pools"
// CHECK: "nn.max_pool2d"(%{{.*}}) {dilation = array<i64: 1, 1>, kernel = array<i64: 3, 3>, pad = array<i64: 1, 2, 1, 2>, stride = array<i64: 2, 2>} : (tensor<1x8x8x2xf32>) -> tensor<1x5x5x2xf32>
// CHECK: "nn.avg_pool2d"(%{{.*}}) {count_pad = array<i64: 1, 1, 1, 1>, divisor = 0 : i64, kernel = array<i64: 3, 3>, pad = array<i64: 1, 2, 1, 2>, stride = array<i64: 2, 2>}
// CHECK: "nn.avg_pool2d"(%{{.*}}) {count_pad = array<i64: 0, 0, 0, 0>, divisor = 3 : i64, kernel = array<i64: 2, 2>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 2, 2>}
func.func @pools(%x: tensor<1x2x8x8xf32>) -> (tensor<1x2x5x5xf32>, tensor<1x2x5x5xf32>, tensor<1x2x4x4xf32>) {
  %0:2 = "mps.MaxPool2DWithIndices"(%x) {ceil_mode = true, count_include_pad = true, dilation_height = 1 : i32, dilation_width = 1 : i32, divisor_override = 0 : i32, kernel_height = 3 : i32, kernel_width = 3 : i32, padding_bottom = 2 : i32, padding_left = 1 : i32, padding_right = 2 : i32, padding_top = 1 : i32, resultSegmentSizes = array<i32: 1, 1>, stride_height = 2 : i32, stride_width = 2 : i32} : (tensor<1x2x8x8xf32>) -> (tensor<1x2x5x5xf32>, tensor<1x2x5x5xi64>)
  %1 = "mps.AvgPool2D"(%x) {ceil_mode = true, count_include_pad = true, dilation_height = 1 : i32, dilation_width = 1 : i32, divisor_override = 0 : i32, kernel_height = 3 : i32, kernel_width = 3 : i32, padding_bottom = 2 : i32, padding_left = 1 : i32, padding_right = 2 : i32, padding_top = 1 : i32, resultSegmentSizes = array<i32: 1, 0>, stride_height = 2 : i32, stride_width = 2 : i32} : (tensor<1x2x8x8xf32>) -> tensor<1x2x5x5xf32>
  %2 = "mps.AvgPool2D"(%x) {ceil_mode = false, count_include_pad = true, dilation_height = 1 : i32, dilation_width = 1 : i32, divisor_override = 3 : i32, kernel_height = 2 : i32, kernel_width = 2 : i32, padding_bottom = 0 : i32, padding_left = 0 : i32, padding_right = 0 : i32, padding_top = 0 : i32, resultSegmentSizes = array<i32: 1, 0>, stride_height = 2 : i32, stride_width = 2 : i32} : (tensor<1x2x8x8xf32>) -> tensor<1x2x4x4xf32>
  return %0#0, %1, %2 : tensor<1x2x5x5xf32>, tensor<1x2x5x5xf32>, tensor<1x2x4x4xf32>
}

// Max pool indices (when read): argmax over the window taps, tap offset + window origin.
// CHECK-LABEL: sym_name = "pool_indices"
// CHECK: %[[TAPS:.*]] = "nn.concat"({{.*}}) {axis = 4 : i64} {{.*}} -> tensor<1x1x2x2x4xf32>
// CHECK-NEXT: %[[BEST:.*]] = "nn.argmax"(%[[TAPS]]) {axis = 4 : i64, keep_dims = false, output_type = "i64"}
// CHECK-NEXT: %[[OFFSETS:.*]] = "nn.constant"() {value = dense<[0, 1, 4, 5]> : tensor<4xi64>}
// CHECK-NEXT: %[[OFFSET:.*]] = "nn.gather"(%[[OFFSETS]], %[[BEST]]) {axis = 0 : i64}
// CHECK-NEXT: %[[ORIGINS:.*]] = "nn.constant"() {value = dense<{{\[\[}}0, 2], [8, 10]]> : tensor<2x2xi64>}
// CHECK-NEXT: %[[I:.*]] = "nn.add"(%[[OFFSET]], %[[ORIGINS]]) : (tensor<1x1x2x2xi64>, tensor<2x2xi64>) -> tensor<1x1x2x2xi64>
func.func @pool_indices(%x: tensor<1x1x4x4xf32>) -> (tensor<1x1x2x2xf32>, tensor<1x1x2x2xi64>) {
  %0:2 = "mps.MaxPool2DWithIndices"(%x) {ceil_mode = false, count_include_pad = true, dilation_height = 1 : i32, dilation_width = 1 : i32, divisor_override = 0 : i32, kernel_height = 2 : i32, kernel_width = 2 : i32, padding_bottom = 0 : i32, padding_left = 0 : i32, padding_right = 0 : i32, padding_top = 0 : i32, resultSegmentSizes = array<i32: 1, 1>, stride_height = 2 : i32, stride_width = 2 : i32} : (tensor<1x1x4x4xf32>) -> (tensor<1x1x2x2xf32>, tensor<1x1x2x2xi64>)
  return %0#0, %0#1 : tensor<1x1x2x2xf32>, tensor<1x1x2x2xi64>
}

// Normalizations and mean work on NCHW with axis attributes; the batch norm's saved statistics
// (empty in inference) are not computed.
// CHECK-LABEL: sym_name = "norms"
// CHECK: ^bb0(%[[X:[^:]*]]:
// CHECK: %[[BN:.*]] = "nn.batch_norm"(%[[X]], {{.*}}) {axis = 1 : i64, epsilon = 9.9999997473787516E-6 : f64} : (tensor<2x3x4x5xf32>
// CHECK: %[[LN:.*]] = "nn.layer_norm"(%[[X]], {{.*}}) {axes = array<i64: 2, 3>, epsilon = 0.0010000000474974513 : f64}
// CHECK-NEXT: %[[M:.*]] = "nn.reduce_mean"(%[[X]]) {axes = array<i64: 2, 3>, keep_dims = false} : (tensor<2x3x4x5xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: "func.return"(%[[BN]], %[[LN]], %[[M]])
func.func @norms(%x: tensor<2x3x4x5xf32>) -> (tensor<2x3x4x5xf32>, tensor<2x3x4x5xf32>, tensor<2x3xf32>) {
  %s = "mps.constant"() {value = dense<0.5> : tensor<3xf32>} : () -> tensor<3xf32>
  %0:3 = "mps.BatchNorm"(%x, %s, %s, %s, %s) {epsilon = 1.0e-5 : f32, momentum = 0.1 : f32, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>, resultSegmentSizes = array<i32: 1, 1, 1>} : (tensor<2x3x4x5xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<2x3x4x5xf32>, tensor<0xf32>, tensor<0xf32>)
  %g = "mps.constant"() {value = dense<0.5> : tensor<4x5xf32>} : () -> tensor<4x5xf32>
  %1:3 = "mps.LayerNorm"(%x, %g, %g) {eps = 1.0e-3 : f32, normalized_shape = array<i32: 4, 5>, operandSegmentSizes = array<i32: 1, 1, 1>, resultSegmentSizes = array<i32: 1, 1, 1>} : (tensor<2x3x4x5xf32>, tensor<4x5xf32>, tensor<4x5xf32>) -> (tensor<2x3x4x5xf32>, tensor<2x3x1x1xf32>, tensor<2x3x1x1xf32>)
  %2 = "mps.Mean"(%x) {dims = array<i32: -1, -2>, keep_dims = false, num_dims = 2 : i32} : (tensor<2x3x4x5xf32>) -> tensor<2x3xf32>
  return %0#0, %1#0, %2 : tensor<2x3x4x5xf32>, tensor<2x3x4x5xf32>, tensor<2x3xf32>
}

// addmm(bias, x, w^T) with alpha = beta = 1 is a fully connected layer (the two transposes of the
// constant weights fold away); other alpha/beta scale the product and the bias; mm is nn.matmul.
// An int4 group-quantized weight folds to a float constant (the int4 data is gone).
// CHECK-LABEL: sym_name = "linear"
// CHECK: ^bb0(%[[X:[^:]*]]: {{[^%]*}}, %[[B:[^:]*]]:
// CHECK: %[[DQ:.*]] = "nn.constant"() {value = {{.*}} : tensor<3x4xf32>}
// CHECK-NEXT: %[[WT:.*]] = "nn.transpose"(%[[DQ]]) {perm = array<i64: 1, 0>} : (tensor<3x4xf32>) -> tensor<4x3xf32>
// CHECK-NEXT: %[[W:.*]] = "nn.transpose"(%[[WT]]) {perm = array<i64: 1, 0>}
// CHECK-NEXT: %[[FC:.*]] = "nn.fully_connected"(%[[X]], %[[W]], %[[B]]) : (tensor<2x4xf32>, tensor<3x4xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: %[[MM:.*]] = "nn.matmul"(%[[X]], %[[WT]]) : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: %[[ALPHA:.*]] = "nn.constant"() {value = dense<2.000000e+00> : tensor<f32>}
// CHECK-NEXT: %[[SCALED:.*]] = "nn.mul"(%[[MM]], %[[ALPHA]])
// CHECK-NEXT: %[[BETA:.*]] = "nn.constant"() {value = dense<5.000000e-01> : tensor<f32>}
// CHECK-NEXT: %[[BIAS:.*]] = "nn.mul"(%[[B]], %[[BETA]])
// CHECK-NEXT: %[[SUM:.*]] = "nn.add"(%[[SCALED]], %[[BIAS]])
// CHECK-NEXT: %[[PLAIN:.*]] = "nn.matmul"(%[[X]], %[[WT]])
// CHECK-NEXT: "func.return"(%[[FC]], %[[SUM]], %[[PLAIN]])
func.func @linear(%x: tensor<2x4xf32>, %b: tensor<3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) {
  %q = "mps.constant"() {value = dense<[[1, -2, 3, -8], [7, 0, 1, 2], [-1, -1, 4, 5]]> : tensor<3x4xi4>} : () -> tensor<3x4xi4>
  %s = "mps.constant"() {value = dense<[[0.5, 0.25], [1.0, 2.0], [0.125, 4.0]]> : tensor<3x2xf32>} : () -> tensor<3x2xf32>
  %w = "mps.DequantizePerChannelGroup"(%q, %s) {dtype = "mps_data_type_int8", group_size = 2 : i32, operandSegmentSizes = array<i32: 1, 1, 0>, output_dtype = "mps_data_type_float32", quant_max = 7 : i32, quant_min = -8 : i32} : (tensor<3x4xi4>, tensor<3x2xf32>) -> tensor<3x4xf32>
  %wt = "mps.Permute"(%w) {num_dims = 2 : i32, perm = array<i32: 1, 0>} : (tensor<3x4xf32>) -> tensor<4x3xf32>
  %0 = "mps.Addmm"(%b, %x, %wt) {alpha = 1.0 : f32, beta = 1.0 : f32, operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<3xf32>, tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  %1 = "mps.Addmm"(%b, %x, %wt) {alpha = 2.0 : f32, beta = 0.5 : f32, operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<3xf32>, tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  %2 = "mps.MatMul"(%x, %wt) {operandSegmentSizes = array<i32: 1, 1>} : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  return %0, %1, %2 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
}
