// Regular NMS: the per-class NMS of every class at once on a [classes, boxes] tensor (detectionsPerClass
// steps, suppression by IoU), then the maxDetections best of the classes' kept candidates (class-major,
// [1, classes * detectionsPerClass]) taken the same way without suppression.
// RUN: %nn2tosa opt %s --passes=legalize-armnn | %FileCheck %s
// RUN: %nn2tosa opt %s --passes=legalize-armnn,canonicalize,lower-to-tosa,cse,dce | %mlir-opt --tosa-attach-target="profiles=pro_fp" --tosa-validate=strict-op-spec-alignment -o /dev/null

// CHECK: %[[PER_CLASS:.*]] = "nn.transpose"({{.*}}) {perm = array<i64: 1, 0>} : (tensor<5x2xf32>) -> tensor<2x5xf32>
// CHECK: "nn.argmax"({{.*}}) {axis = 1 : i64, keep_dims = false, output_type = "i32"} : (tensor<2x5xf32>) -> tensor<2xi32>
// One IoU of each class's taken box against the five boxes, in the first step only (the last step suppresses nothing).
// CHECK-NOT: "nn.argmax"
// CHECK: "nn.div"({{.*}}) : (tensor<2x5xf32>, tensor<2x5xf32>) -> tensor<2x5xf32>
// CHECK: "nn.argmax"{{.*}} : (tensor<2x5xf32>) -> tensor<2xi32>
// CHECK-NOT: "nn.div"
// CHECK: %[[KEPT:.*]] = "nn.reshape"({{.*}}) {shape = array<i64: 1, 4>} : (tensor<2x2xf32>) -> tensor<1x4xf32>
// CHECK-COUNT-3: "nn.argmax"{{.*}} : (tensor<1x4xf32>) -> tensor<1xi32>
// CHECK-NOT: "nn.argmax"
// CHECK-NOT: "nn.div"
// CHECK: "func.return"
func.func @main(%boxes: tensor<1x5x4xf32>, %scores: tensor<1x5x3xf32>) -> (tensor<1x3x4xf32>, tensor<1x3xf32>, tensor<1x3xf32>, tensor<1xf32>) {
  %anchors = "armnn.Constant"() {value = dense<[[0.25, 0.25, 0.5, 0.5], [0.3, 0.3, 0.5, 0.5], [0.75, 0.75, 0.5, 0.5], [0.5, 0.2, 0.4, 0.4], [0.5, 0.8, 0.4, 0.4]]> : tensor<5x4xf32>} : () -> tensor<5x4xf32> loc(#dpp)
  %d:4 = "armnn.DetectionPostProcess"(%boxes, %scores, %anchors) {detectionsPerClass = 2 : i64, maxClassesPerDetection = 1 : i64, maxDetections = 3 : i64, nmsIouThreshold = 5.000000e-01 : f32, nmsScoreThreshold = 1.000000e-01 : f32, numClasses = 2 : i64, scaleH = 5.000000e+00 : f32, scaleW = 5.000000e+00 : f32, scaleX = 1.000000e+01 : f32, scaleY = 1.000000e+01 : f32, useRegularNms = true} : (tensor<1x5x4xf32>, tensor<1x5x3xf32>, tensor<5x4xf32>) -> (tensor<1x3x4xf32>, tensor<1x3xf32>, tensor<1x3xf32>, tensor<1xf32>) loc(#dpp)
  return %d#0, %d#1, %d#2, %d#3 : tensor<1x3x4xf32>, tensor<1x3xf32>, tensor<1x3xf32>, tensor<1xf32>
}
#dpp = loc("detect"("layer 2"))
