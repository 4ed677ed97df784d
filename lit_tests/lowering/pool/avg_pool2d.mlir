// RUN: %nn2tosa opt %s --passes=lower-to-tosa,cse,dce | %FileCheck %s

// Padding not counted (count_pad 0), below the kernel: AVG_POOL2D itself, whose divisor excludes padding.
// CHECK-LABEL: sym_name = "exclude"
// CHECK: %[[Y:.*]] = "tosa.avg_pool2d"(%{{.*}}) <{acc_type = f32, kernel = array<i64: 3, 3>, pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 2, 2>}> : (tensor<1x5x5x2xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x3x3x2xf32>
// CHECK-NEXT: "func.return"(%[[Y]])
func.func @exclude(%x: tensor<1x5x5x2xf32>) -> tensor<1x3x3x2xf32> {
  %y = "nn.avg_pool2d"(%x) {kernel = array<i64: 3, 3>, stride = array<i64: 2, 2>, pad = array<i64: 1, 1, 1, 1>, count_pad = array<i64: 0, 0, 0, 0>, divisor = 0 : i64} : (tensor<1x5x5x2xf32>) -> tensor<1x3x3x2xf32>
  return %y : tensor<1x3x3x2xf32>
}

// Counted padding (top, left, right) becomes explicit zeros, so TOSA's divisor counts it; the
// uncounted bottom row stays TOSA padding. f16 accumulates in f32. No rescaling.
// CHECK-LABEL: sym_name = "counted"
// CHECK: "tosa.pad"{{.*}} : (tensor<1x5x5x2xf16>, !tosa.shape<8>, tensor<1xf16>) -> tensor<1x6x7x2xf16>
// CHECK: %[[Y:.*]] = "tosa.avg_pool2d"({{.*}}) <{acc_type = f32, kernel = array<i64: 3, 3>, pad = array<i64: 0, 1, 0, 0>, stride = array<i64: 2, 2>}> : (tensor<1x6x7x2xf16>, tensor<1xf16>, tensor<1xf16>) -> tensor<1x3x3x2xf16>
// CHECK-NOT: "tosa.mul"
// CHECK: "func.return"(%[[Y]])
func.func @counted(%x: tensor<1x5x5x2xf16>) -> tensor<1x3x3x2xf16> {
  %y = "nn.avg_pool2d"(%x) {kernel = array<i64: 3, 3>, stride = array<i64: 2, 2>, pad = array<i64: 1, 1, 1, 1>, count_pad = array<i64: 1, 0, 1, 1>, divisor = 0 : i64} : (tensor<1x5x5x2xf16>) -> tensor<1x3x3x2xf16>
  return %y : tensor<1x3x3x2xf16>
}

// A divisor: the average over the full kernel area, times area / divisor = 4/3.
// CHECK-LABEL: sym_name = "divisor"
// CHECK: %[[A:.*]] = "tosa.avg_pool2d"
// CHECK: %[[F:.*]] = "tosa.const"() <{values = dense<1.33333337> : tensor<1x1x1x1xf32>}>
// CHECK: "tosa.mul"(%[[A]], %[[F]], %{{.*}})
func.func @divisor(%x: tensor<1x4x4x1xf32>) -> tensor<1x2x2x1xf32> {
  %y = "nn.avg_pool2d"(%x) {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>, pad = array<i64: 0, 0, 0, 0>, count_pad = array<i64: 0, 0, 0, 0>, divisor = 3 : i64} : (tensor<1x4x4x1xf32>) -> tensor<1x2x2x1xf32>
  return %y : tensor<1x2x2x1xf32>
}

// Uncounted padding >= kernel: all padding explicit, then area / count per output position;
// the first and last windows count nothing: inf, so 0 * inf = NaN as nn's 0 / 0.
// CHECK-LABEL: sym_name = "uncounted_beyond_kernel"
// CHECK: %[[A:.*]] = "tosa.avg_pool2d"({{.*}}pad = array<i64: 0, 0, 0, 0>{{.*}} -> tensor<1x3x1x1xf32>
// CHECK: %[[F:.*]] = "tosa.const"() <{values = dense<{{\[\[\[\[}}0x7F800000]], {{\[\[}}1.000000e+00]], {{\[\[}}0x7F800000]]]]> : tensor<1x3x1x1xf32>}>
// CHECK: "tosa.mul"(%[[A]], %[[F]], %{{.*}})
func.func @uncounted_beyond_kernel(%x: tensor<1x2x1x1xf32>) -> tensor<1x3x1x1xf32> {
  %y = "nn.avg_pool2d"(%x) {kernel = array<i64: 2, 1>, stride = array<i64: 2, 1>, pad = array<i64: 2, 2, 0, 0>, count_pad = array<i64: 0, 0, 0, 0>, divisor = 0 : i64} : (tensor<1x2x1x1xf32>) -> tensor<1x3x1x1xf32>
  return %y : tensor<1x3x1x1xf32>
}
