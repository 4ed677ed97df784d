// RUN: %nn2tosa opt %s --passes=lower-to-tosa,cse,dce | %FileCheck %s

// max_pool3d: a 2-D pool over (H, W) of each depth slice ([N*D, H, W, C]), then a (depth x 1) pool
// over [N, D, OH*OW, C]. Max is exact in any order.
// CHECK-LABEL: sym_name = "max3d"
// CHECK: "tosa.reshape"(%{{.*}}) : (tensor<1x4x5x6x2xf32>, !tosa.shape<4>) -> tensor<4x5x6x2xf32>
// CHECK: "tosa.max_pool2d"(%{{.*}}) <{kernel = array<i64: 3, 2>, {{.*}}pad = array<i64: 1, 1, 0, 0>, stride = array<i64: 1, 2>}> : (tensor<4x5x6x2xf32>) -> tensor<4x5x3x2xf32>
// CHECK: "tosa.reshape"(%{{.*}}) : (tensor<4x5x3x2xf32>, !tosa.shape<4>) -> tensor<1x4x15x2xf32>
// CHECK: "tosa.max_pool2d"(%{{.*}}) <{kernel = array<i64: 2, 1>, {{.*}}pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 2, 1>}> : (tensor<1x4x15x2xf32>) -> tensor<1x2x15x2xf32>
// CHECK: "tosa.reshape"(%{{.*}}) : (tensor<1x2x15x2xf32>, !tosa.shape<5>) -> tensor<1x2x5x3x2xf32>
func.func @max3d(%x: tensor<1x4x5x6x2xf32>) -> tensor<1x2x5x3x2xf32> {
  %y = "nn.max_pool3d"(%x) {kernel = array<i64: 2, 3, 2>, stride = array<i64: 2, 1, 2>, pad = array<i64: 0, 0, 1, 1, 0, 0>} : (tensor<1x4x5x6x2xf32>) -> tensor<1x2x5x3x2xf32>
  return %y : tensor<1x2x5x3x2xf32>
}

// avg_pool3d: window sums in f32 by the same two passes (each an unpadded average times its area),
// then times 1 / count, the count of a box being the product of its per-axis counts. Here the
// depth padding is counted and the (H, W) padding is not: counts [2, 2] x [1, 2] x [1, 2].
// CHECK-LABEL: sym_name = "avg3d"
// CHECK: "tosa.cast"{{.*}} -> tensor<1x2x3x3x1xf32>
// CHECK: "tosa.avg_pool2d"{{.*}} -> tensor<2x2x2x1xf32>
// CHECK: dense<4.000000e+00> : tensor<1x1x1x1xf32>
// CHECK: "tosa.avg_pool2d"{{.*}} -> tensor<1x2x4x1xf32>
// CHECK: dense<2.000000e+00> : tensor<1x1x1x1xf32>
// CHECK: dense<{{\[\[\[\[\[}}5.000000e-01], [2.500000e-01]], {{\[\[}}2.500000e-01], [1.250000e-01]]], {{.*}}> : tensor<1x2x2x2x1xf32>
// CHECK: "tosa.cast"{{.*}} -> tensor<1x2x2x2x1xf16>
func.func @avg3d(%x: tensor<1x2x3x3x1xf16>) -> tensor<1x2x2x2x1xf16> {
  %y = "nn.avg_pool3d"(%x) {kernel = array<i64: 2, 2, 2>, stride = array<i64: 2, 2, 2>, pad = array<i64: 1, 1, 1, 0, 1, 0>, count_pad = array<i64: 1, 1, 0, 0, 0, 0>, divisor = 0 : i64} : (tensor<1x2x3x3x1xf16>) -> tensor<1x2x2x2x1xf16>
  return %y : tensor<1x2x2x2x1xf16>
}

// l2_pool3d: sqrt of the 3-D average of x * x (padding uncounted), as l2_pool2d.
// CHECK-LABEL: sym_name = "l2_3d"
// CHECK: %[[SQ:.*]] = "tosa.mul"(%[[X:.*]], %[[X]], %{{.*}}) : (tensor<1x2x2x2x1xf32>
// CHECK: "tosa.avg_pool2d"
// CHECK: "tosa.avg_pool2d"
// CHECK: "tosa.rsqrt"
// CHECK: "tosa.reciprocal"
func.func @l2_3d(%x: tensor<1x2x2x2x1xf32>) -> tensor<1x1x1x1x1xf32> {
  %y = "nn.l2_pool3d"(%x) {kernel = array<i64: 2, 2, 2>, stride = array<i64: 1, 1, 1>, pad = array<i64: 0, 0, 0, 0, 0, 0>} : (tensor<1x2x2x2x1xf32>) -> tensor<1x1x1x1x1xf32>
  return %y : tensor<1x1x1x1x1xf32>
}
