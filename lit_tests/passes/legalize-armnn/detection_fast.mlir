// DetectionPostProcess as nn ops: box decoding, then NMS unrolled into maxDetections steps of "take the
// best alive candidate (ARGMAX of the alive scores, the others -inf), kill it and every candidate whose
// IoU with it exceeds the threshold (one IoU against all, SELECT)". Indices travel as f32 and rows are
// read by one-hot comparison, so the float graph needs only pro_fp (no GATHER, no i32 data movement).
// RUN: %nn2tosa opt %s --passes=legalize-armnn | %FileCheck %s
// RUN: %nn2tosa opt %s --passes=legalize-armnn | %FileCheck %s --check-prefix=STEPS
// RUN: %nn2tosa opt %s --passes=legalize-armnn | %FileCheck %s --check-prefix=UPDATES
// RUN: %nn2tosa opt %s --passes=legalize-armnn,canonicalize,lower-to-tosa,cse,dce | %FileCheck %s --check-prefix=TOSA
// RUN: %nn2tosa opt %s --passes=legalize-armnn,canonicalize,lower-to-tosa,cse,dce | %mlir-opt --tosa-attach-target="profiles=pro_fp" --tosa-validate=strict-op-spec-alignment -o /dev/null

// Decoding: encodings / scale * anchor size + anchor centre, half sizes 0.5 * exp(e / scale) * size.
// CHECK: "nn.div"({{.*}}) : (tensor<5x1xf32>, tensor<f32>) -> tensor<5x1xf32>
// CHECK: "nn.exp"
// CHECK: %[[CORNERS:.*]] = "nn.concat"({{.*}}) {axis = 1 : i64} : (tensor<5x1xf32>, tensor<5x1xf32>, tensor<5x1xf32>, tensor<5x1xf32>) -> tensor<5x4xf32>
// The background column 0 is dropped; each box's best class (fast NMS, one class per box).
// CHECK: "nn.slice"({{.*}}) {begin = array<i64: 0, 1>, size = array<i64: 5, 2>} : (tensor<5x3xf32>) -> tensor<5x2xf32>
// CHECK: "nn.argmax"({{.*}}) {axis = 1 : i64, keep_dims = false, output_type = "i32"} : (tensor<5x2xf32>) -> tensor<5xi32>
// Step 1: alive = score >= threshold; the best alive one, its index as f32.
// CHECK: %[[ALIVE:.*]] = "nn.greater_equal"(%[[SCORES:.*]], %{{.*}}) : (tensor<1x5xf32>, tensor<f32>) -> tensor<1x5xi1>
// CHECK: %[[NEG_INF:.*]] = "nn.constant"() {value = dense<0xFF800000> : tensor<f32>}
// CHECK: %[[MASKED:.*]] = "nn.select"(%[[ALIVE]], %[[SCORES]], %[[NEG_INF]])
// CHECK: %[[ARG:.*]] = "nn.argmax"(%[[MASKED]])
// CHECK: %[[IDX_F:.*]] = "nn.cast"(%[[ARG]]) : (tensor<1xi32>) -> tensor<1xf32>
// CHECK: %[[IDX:.*]] = "nn.reshape"(%[[IDX_F]]) {shape = array<i64: 1, 1>}
// CHECK: "nn.reduce_any"(%[[ALIVE]]) {axes = array<i64: 1>, keep_dims = true}
// CHECK: "nn.reduce_max"(%[[MASKED]])
// CHECK: %[[SELF:.*]] = "nn.equal"(%{{.*}}, %[[IDX]]) : (tensor<1x5xf32>, tensor<1x1xf32>) -> tensor<1x5xi1>
// The taken box's row, by one-hot comparison (no gather), then its IoU against all five.
// CHECK: "nn.select"({{.*}}) : (tensor<1x5x1xi1>, tensor<1x5x5xf32>, tensor<f32>) -> tensor<1x5x5xf32>
// CHECK: "nn.reduce_max"({{.*}}) {axes = array<i64: 1>, keep_dims = false} : (tensor<1x5x5xf32>) -> tensor<1x5xf32>
// CHECK: %[[INTER:.*]] = "nn.mul"({{.*}}) : (tensor<1x5xf32>, tensor<1x5xf32>) -> tensor<1x5xf32>
// CHECK: %[[SUM:.*]] = "nn.add"({{.*}}) : (tensor<1x1xf32>, tensor<1x5xf32>) -> tensor<1x5xf32>
// CHECK: %[[UNION:.*]] = "nn.sub"(%[[SUM]], %[[INTER]])
// CHECK: %[[IOU:.*]] = "nn.div"(%[[INTER]], %[[UNION]])
// CHECK: %[[OVER:.*]] = "nn.greater"(%[[IOU]], %{{.*}})
// CHECK: %[[DEAD:.*]] = "nn.logical_or"(%[[SELF]], %[[OVER]])
// CHECK: %[[KEEP:.*]] = "nn.logical_not"(%[[DEAD]])
// CHECK: %[[ALIVE2:.*]] = "nn.logical_and"(%[[ALIVE]], %[[KEEP]])
// Step 2 starts from what step 1 left alive.
// CHECK: "nn.select"(%[[ALIVE2]], %[[SCORES]], %[[NEG_INF]])
// The count is the number of real steps; unfilled rows are zeros.
// CHECK: "nn.reduce_sum"({{.*}}) {axes = array<i64: 0, 1>, keep_dims = false} : (tensor<3x1xf32>) -> tensor<f32>
// CHECK: "func.return"({{.*}}) : (tensor<1x3x4xf32>, tensor<1x3xf32>, tensor<1x3xf32>, tensor<1xf32>)

// maxDetections = 3 steps (plus the per-box best class); the last step suppresses nothing.
// STEPS-COUNT-4: "nn.argmax"
// STEPS-NOT: "nn.argmax"
// STEPS-NOT: armnn.
// UPDATES-COUNT-2: "nn.logical_and"
// UPDATES-NOT: "nn.logical_and"

// TOSA-NOT: tosa.gather
// TOSA-COUNT-4: "tosa.argmax"
// TOSA-NOT: "tosa.argmax"
func.func @main(%boxes: tensor<1x5x4xf32>, %scores: tensor<1x5x3xf32>) -> (tensor<1x3x4xf32>, tensor<1x3xf32>, tensor<1x3xf32>, tensor<1xf32>) {
  %anchors = "armnn.Constant"() {value = dense<[[0.25, 0.25, 0.5, 0.5], [0.3, 0.3, 0.5, 0.5], [0.75, 0.75, 0.5, 0.5], [0.5, 0.2, 0.4, 0.4], [0.5, 0.8, 0.4, 0.4]]> : tensor<5x4xf32>} : () -> tensor<5x4xf32> loc(#dpp)
  %d:4 = "armnn.DetectionPostProcess"(%boxes, %scores, %anchors) {detectionsPerClass = 2 : i64, maxClassesPerDetection = 1 : i64, maxDetections = 3 : i64, nmsIouThreshold = 5.000000e-01 : f32, nmsScoreThreshold = 1.000000e-01 : f32, numClasses = 2 : i64, scaleH = 5.000000e+00 : f32, scaleW = 5.000000e+00 : f32, scaleX = 1.000000e+01 : f32, scaleY = 1.000000e+01 : f32, useRegularNms = false} : (tensor<1x5x4xf32>, tensor<1x5x3xf32>, tensor<5x4xf32>) -> (tensor<1x3x4xf32>, tensor<1x3xf32>, tensor<1x3xf32>, tensor<1xf32>) loc(#dpp)
  return %d#0, %d#1, %d#2, %d#3 : tensor<1x3x4xf32>, tensor<1x3xf32>, tensor<1x3xf32>, tensor<1xf32>
}
#dpp = loc("detect"("layer 2"))
