// RUN: %nn2tosa opt %s --passes=lower-to-tosa,cse,dce | %FileCheck %s

// groups = 1: TOSA CONV2D. nn rounds the output size down, TOSA wants it exact: (5 + 0 + 1 - 3) % 2 = 1
// row past the last window comes off the bottom padding. No bias: zeros [1]; f32 accumulator.
// CHECK-LABEL: sym_name = "plain"
// CHECK: ^bb0(%[[X:[^:]*]]:
// CHECK-DAG: %[[W:.*]] = "tosa.const"() <{values = dense_resource<{{.*}}> : tensor<4x3x3x2xf32>}>
// CHECK-DAG: %[[Z:.*]] = "tosa.const"() <{values = dense<0.000000e+00> : tensor<1xf32>}>
// CHECK: %[[C:.*]] = "tosa.conv2d"(%[[X]], %[[W]], %[[Z]], %[[Z]], %[[Z]]) <{acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 1, 1>, stride = array<i64: 2, 2>}> : ({{.*}}) -> tensor<1x2x3x4xf32>
// CHECK: "func.return"(%[[C]])
func.func @plain(%x: tensor<1x5x5x2xf32>) -> tensor<1x2x3x4xf32> {
  %w = "nn.constant"() {value = dense<1.0> : tensor<4x3x3x2xf32>} : () -> tensor<4x3x3x2xf32>
  %y = "nn.conv2d"(%x, %w) {stride = array<i64: 2, 2>, dilation = array<i64: 1, 1>, pad = array<i64: 0, 1, 1, 1>, groups = 1 : i64} : (tensor<1x5x5x2xf32>, tensor<4x3x3x2xf32>) -> tensor<1x2x3x4xf32>
  return %y : tensor<1x2x3x4xf32>
}

// Rows past the last window and no trailing padding left to drop: the input is sliced.
// (9 - 3) % 4 = 2 rows; (9 + 1 - 3) % 4 = 3 columns: the right padding and 2 columns.
// CHECK-LABEL: sym_name = "crop_input"
// CHECK: %[[S:.*]] = "tosa.slice"(%{{.*}}, %{{.*}}, %{{.*}}) : (tensor<1x9x9x1xf32>, !tosa.shape<4>, !tosa.shape<4>) -> tensor<1x7x7x1xf32>
// CHECK: "tosa.conv2d"(%[[S]], {{.*}}pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 4, 4>{{.*}} -> tensor<1x2x2x1xf32>
func.func @crop_input(%x: tensor<1x9x9x1xf32>) -> tensor<1x2x2x1xf32> {
  %w = "nn.constant"() {value = dense<1.0> : tensor<1x3x3x1xf32>} : () -> tensor<1x3x3x1xf32>
  %y = "nn.conv2d"(%x, %w) {stride = array<i64: 4, 4>, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 1>, groups = 1 : i64} : (tensor<1x9x9x1xf32>, tensor<1x3x3x1xf32>) -> tensor<1x2x2x1xf32>
  return %y : tensor<1x2x2x1xf32>
}

// One input channel per group: DEPTHWISE_CONV2D, weights [O = C*M, KH, KW, 1] rearranged to
// [KH, KW, C, M] at conversion time (output channel c*M + m in both).
// CHECK-LABEL: sym_name = "depthwise_shaped"
// CHECK-NOT: "tosa.transpose"
// CHECK-DAG: %[[W:.*]] = "tosa.const"() <{values = dense<{{\[\[\[\[}}1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00]]]]> : tensor<1x1x2x2xf32>}>
// CHECK-DAG: %[[B:.*]] = "tosa.const"() <{values = dense<[1.000000e+01, 2.000000e+01, 3.000000e+01, 4.000000e+01]> : tensor<4xf32>}>
// CHECK: "tosa.depthwise_conv2d"(%{{.*}}, %[[W]], %[[B]], {{.*}}) -> tensor<1x3x3x4xf32>
func.func @depthwise_shaped(%x: tensor<1x3x3x2xf32>) -> tensor<1x3x3x4xf32> {
  %w = "nn.constant"() {value = dense<[[[[1.0]]], [[[2.0]]], [[[3.0]]], [[[4.0]]]]> : tensor<4x1x1x1xf32>} : () -> tensor<4x1x1x1xf32>
  %b = "nn.constant"() {value = dense<[10.0, 20.0, 30.0, 40.0]> : tensor<4xf32>} : () -> tensor<4xf32>
  %y = "nn.conv2d"(%x, %w, %b) {stride = array<i64: 1, 1>, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, groups = 2 : i64} : (tensor<1x3x3x2xf32>, tensor<4x1x1x1xf32>, tensor<4xf32>) -> tensor<1x3x3x4xf32>
  return %y : tensor<1x3x3x4xf32>
}

// Other group counts: one CONV2D per group on a channel slice (weights and bias sliced at
// conversion time), joined by CONCAT on the channels.
// CHECK-LABEL: sym_name = "grouped"
// CHECK-DAG: %[[X0:.*]] = "tosa.slice"(%{{.*}}) : (tensor<1x3x3x4xf32>, {{.*}}) -> tensor<1x3x3x2xf32>
// CHECK-DAG: %[[X1:.*]] = "tosa.slice"(%{{.*}}) : (tensor<1x3x3x4xf32>, {{.*}}) -> tensor<1x3x3x2xf32>
// CHECK-DAG: %[[Y0:.*]] = "tosa.conv2d"(%[[X0]], {{.*}} -> tensor<1x3x3x3xf32>
// CHECK-DAG: %[[Y1:.*]] = "tosa.conv2d"(%[[X1]], {{.*}} -> tensor<1x3x3x3xf32>
// CHECK: "tosa.concat"(%[[Y0]], %[[Y1]]) <{axis = 3 : i32}> : (tensor<1x3x3x3xf32>, tensor<1x3x3x3xf32>) -> tensor<1x3x3x6xf32>
func.func @grouped(%x: tensor<1x3x3x4xf32>) -> tensor<1x3x3x6xf32> {
  %w = "nn.constant"() {value = dense<0.5> : tensor<6x1x1x2xf32>} : () -> tensor<6x1x1x2xf32>
  %y = "nn.conv2d"(%x, %w) {stride = array<i64: 1, 1>, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, groups = 2 : i64} : (tensor<1x3x3x4xf32>, tensor<6x1x1x2xf32>) -> tensor<1x3x3x6xf32>
  return %y : tensor<1x3x3x6xf32>
}

// f16 stays f16 and accumulates in f32; dilation goes to TOSA as it is.
// CHECK-LABEL: sym_name = "f16_dilated"
// CHECK: "tosa.conv2d"({{.*}}) <{acc_type = f32, dilation = array<i64: 2, 1>, {{.*}}}> : (tensor<1x5x4x1xf16>, tensor<1x2x2x1xf16>, tensor<1xf16>, tensor<1xf16>, tensor<1xf16>) -> tensor<1x3x3x1xf16>
func.func @f16_dilated(%x: tensor<1x5x4x1xf16>) -> tensor<1x3x3x1xf16> {
  %w = "nn.constant"() {value = dense<1.0> : tensor<1x2x2x1xf16>} : () -> tensor<1x2x2x1xf16>
  %y = "nn.conv2d"(%x, %w) {stride = array<i64: 1, 1>, dilation = array<i64: 2, 1>, pad = array<i64: 0, 0, 0, 0>, groups = 1 : i64} : (tensor<1x5x4x1xf16>, tensor<1x2x2x1xf16>) -> tensor<1x3x3x1xf16>
  return %y : tensor<1x3x3x1xf16>
}
