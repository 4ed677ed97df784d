// RUN: %nn2tosa opt %s --passes=lower-to-tosa,cse,dce | %FileCheck %s

// sqrt(average of x * x), padding uncounted, in f32: sqrt as RECIPROCAL(RSQRT) (POW is unpredictable
// on NaN and infinity). Windows whose mean square overflows f32 take the same computed on x * 2^-64,
// times 2^64.
// CHECK-LABEL: sym_name = "l2"
// CHECK: ^bb0(%[[X:[^:]*]]:
// CHECK: %[[SQ:.*]] = "tosa.mul"(%[[X]], %[[X]], %{{.*}})
// CHECK: %[[M:.*]] = "tosa.avg_pool2d"(%[[SQ]], {{.*}}pad = array<i64: 1, 1, 1, 1>{{.*}} -> tensor<1x4x4x1xf32>
// CHECK: %[[R:.*]] = "tosa.rsqrt"(%[[M]])
// CHECK: %[[Y:.*]] = "tosa.reciprocal"(%[[R]])
// CHECK: %[[S:.*]] = "tosa.const"() <{values = dense<5.42101086E-20> : tensor<1x1x1x1xf32>}>
// CHECK: %[[SMALL:.*]] = "tosa.mul"(%[[X]], %[[S]], %{{.*}})
// CHECK: "tosa.mul"(%[[SMALL]], %[[SMALL]], %{{.*}})
// CHECK: %[[INF:.*]] = "tosa.const"() <{values = dense<0x7F800000> : tensor<1x1x1x1xf32>}>
// CHECK: %[[OVER:.*]] = "tosa.equal"(%[[Y]], %[[INF]])
// CHECK: %[[OUT:.*]] = "tosa.select"(%[[OVER]], %{{.*}}, %[[Y]])
// CHECK: "func.return"(%[[OUT]])
func.func @l2(%x: tensor<1x4x4x1xf32>) -> tensor<1x4x4x1xf32> {
  %y = "nn.l2_pool2d"(%x) {kernel = array<i64: 3, 3>, stride = array<i64: 1, 1>, pad = array<i64: 1, 1, 1, 1>} : (tensor<1x4x4x1xf32>) -> tensor<1x4x4x1xf32>
  return %y : tensor<1x4x4x1xf32>
}

// f16 squares always fit f32: cast up, no overflow rescue, cast back.
// CHECK-LABEL: sym_name = "l2_f16"
// CHECK: "tosa.cast"{{.*}} -> tensor<1x4x4x1xf32>
// CHECK-NOT: "tosa.select"
// CHECK: "tosa.cast"{{.*}} -> tensor<1x2x2x1xf16>
func.func @l2_f16(%x: tensor<1x4x4x1xf16>) -> tensor<1x2x2x1xf16> {
  %y = "nn.l2_pool2d"(%x) {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>, pad = array<i64: 0, 0, 0, 0>} : (tensor<1x4x4x1xf16>) -> tensor<1x2x2x1xf16>
  return %y : tensor<1x2x2x1xf16>
}
