// RUN: %nn2tosa opt %s --passes=lower-to-tosa,cse,dce | %FileCheck %s

// A 1x1 CONV2D: x [2, 3, 4] -> [1, 6, 1, 4]; constant W [2, 4] keeps its layout as [2, 1, 1, 4]
// (a reshape of the same bytes: no transposed copy of the weights); the bias is the convolution's;
// the result reshaped to [2, 3, 2].
// CHECK-LABEL: sym_name = "fc"
// CHECK-NOT: "tosa.transpose"
// CHECK-DAG: %[[B:.*]] = "tosa.const"() <{values = dense<[1.000000e+01, 2.000000e+01]> : tensor<2xf32>}>
// CHECK-DAG: %[[X:.*]] = "tosa.reshape"(%{{.*}}) : (tensor<2x3x4xf32>, !tosa.shape<4>) -> tensor<1x6x1x4xf32>
// CHECK-DAG: %[[W:.*]] = "tosa.const"() <{values = dense<{{\[\[\[\[}}1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]]], {{\[\[\[}}5.000000e+00, 6.000000e+00, 7.000000e+00, 8.000000e+00]]]]> : tensor<2x1x1x4xf32>}>
// CHECK: %[[P:.*]] = "tosa.conv2d"(%[[X]], %[[W]], %[[B]], %{{.*}}, %{{.*}}) <{acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>}> : ({{.*}}) -> tensor<1x6x1x2xf32>
// CHECK: %[[Y:.*]] = "tosa.reshape"(%[[P]], %{{.*}}) : (tensor<1x6x1x2xf32>, !tosa.shape<3>) -> tensor<2x3x2xf32>
// CHECK: "func.return"(%[[Y]])
func.func @fc(%x: tensor<2x3x4xf32>) -> tensor<2x3x2xf32> {
  %w = "nn.constant"() {value = dense<[[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]]> : tensor<2x4xf32>} : () -> tensor<2x4xf32>
  %b = "nn.constant"() {value = dense<[10.0, 20.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %y = "nn.fully_connected"(%x, %w, %b) : (tensor<2x3x4xf32>, tensor<2x4xf32>, tensor<2xf32>) -> tensor<2x3x2xf32>
  return %y : tensor<2x3x2xf32>
}

// Weights from an input are reshaped (not transposed) at run time; f16: the f16 bias is the
// convolution's, added in its f32 accumulator, which rounds once to f16.
// CHECK-LABEL: sym_name = "runtime_weights_f16"
// CHECK: ^bb0(%[[X:[^:]*]]: tensor<3x4xf16> {{.*}}, %[[W:[^:]*]]: tensor<5x4xf16>
// CHECK-NOT: "tosa.transpose"
// CHECK-DAG: %[[B:.*]] = "tosa.const"() <{values = dense<5.000000e-01> : tensor<5xf16>}>
// CHECK-DAG: %[[W4:.*]] = "tosa.reshape"(%[[W]], %{{.*}}) : (tensor<5x4xf16>, !tosa.shape<4>) -> tensor<5x1x1x4xf16>
// CHECK: %[[P:.*]] = "tosa.conv2d"(%{{.*}}, %[[W4]], %[[B]], %{{.*}}, %{{.*}}) <{acc_type = f32, {{.*}}}> : ({{.*}}) -> tensor<1x3x1x5xf16>
// CHECK-NOT: "tosa.cast"
// CHECK: "tosa.reshape"(%[[P]], %{{.*}}) : (tensor<1x3x1x5xf16>, !tosa.shape<2>) -> tensor<3x5xf16>
func.func @runtime_weights_f16(%x: tensor<3x4xf16>, %w: tensor<5x4xf16>) -> tensor<3x5xf16> {
  %b = "nn.constant"() {value = dense<0.5> : tensor<5xf16>} : () -> tensor<5xf16>
  %y = "nn.fully_connected"(%x, %w, %b) : (tensor<3x4xf16>, tensor<5x4xf16>, tensor<5xf16>) -> tensor<3x5xf16>
  return %y : tensor<3x5xf16>
}
