// RUN: %nn2tosa opt %s --passes=lower-to-tosa,cse,dce | %FileCheck %s

// argmax of floats is TOSA ARGMAX; keep_dims=true reshapes its axis back.
// CHECK-LABEL: sym_name = "argmax_f32"
// CHECK: %[[I:.*]] = "tosa.argmax"(%{{.*}}) <{axis = 1 : i32{{.*}}}> : (tensor<3x4xf32>) -> tensor<3xi32>
// CHECK: "tosa.reshape"(%[[I]], %{{.*}}) : (tensor<3xi32>, !tosa.shape<2>) -> tensor<3x1xi32>
func.func @argmax_f32(%x: tensor<3x4xf32>) -> tensor<3x1xi64> {
  %a = "nn.argmax"(%x) {axis = 1 : i64, keep_dims = true, output_type = "i64"} : (tensor<3x4xf32>) -> tensor<3x1xi64>
  return %a : tensor<3x1xi64>
}

// argmin: ARGMAX of -x for floats, of ~x for i8 (order-reversing, no overflow).
// CHECK-LABEL: sym_name = "argmin"
// CHECK: %[[N:.*]] = "tosa.negate"
// CHECK: "tosa.argmax"(%[[N]])
// CHECK: %[[B:.*]] = "tosa.bitwise_not"
// CHECK: "tosa.argmax"(%[[B]])
func.func @argmin(%x: tensor<3x4xf16>, %q: tensor<3x4xi8>) -> (tensor<3xi32>, tensor<3xi32>) {
  %a = "nn.argmin"(%x) {axis = 1 : i64, keep_dims = false, output_type = "i32"} : (tensor<3x4xf16>) -> tensor<3xi32>
  %b = "nn.argmin"(%q) {axis = 1 : i64, keep_dims = false, output_type = "i32"} : (tensor<3x4xi8>) -> tensor<3xi32>
  return %a, %b : tensor<3xi32>, tensor<3xi32>
}

// i32 (no ARGMAX form without EXT-INT16 or at all): the smallest position where x equals its maximum.
// CHECK-LABEL: sym_name = "argmax_i32"
// CHECK-NOT: "tosa.argmax"
// CHECK: %[[M:.*]] = "tosa.reduce_max"{{.*}} -> tensor<3x1xi32>
// CHECK: %[[E:.*]] = "tosa.equal"(%{{.*}}, %[[M]])
// CHECK: dense<{{\[\[}}0, 1, 2, 3]]> : tensor<1x4xi32>
// CHECK: %[[S:.*]] = "tosa.select"(%[[E]]
// CHECK: "tosa.reduce_min"(%[[S]])
func.func @argmax_i32(%x: tensor<3x4xi32>) -> tensor<3xi32> {
  %a = "nn.argmax"(%x) {axis = 1 : i64, keep_dims = false, output_type = "i32"} : (tensor<3x4xi32>) -> tensor<3xi32>
  return %a : tensor<3xi32>
}
