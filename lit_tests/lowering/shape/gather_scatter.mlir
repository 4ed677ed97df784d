// RUN: %nn2tosa opt %s --passes=lower-to-tosa,cse,dce | %FileCheck %s

// gather along axis 1 of [2, 5, 3] by [4] indices: values [2, 5, 3], indices tiled to [2, 4].
// CHECK-LABEL: sym_name = "gather"
// CHECK: "tosa.reshape"{{.*}} -> tensor<1x4xi32>
// CHECK: %[[I:.*]] = "tosa.tile"{{.*}} -> tensor<2x4xi32>
// CHECK: %[[G:.*]] = "tosa.gather"(%{{.*}}, %[[I]]) : (tensor<2x5x3xf32>, tensor<2x4xi32>) -> tensor<2x4x3xf32>
func.func @gather(%x: tensor<2x5x3xf32>, %i: tensor<4xi64>) -> tensor<2x4x3xf32> {
  %a = "nn.gather"(%x, %i) {axis = 1 : i64} : (tensor<2x5x3xf32>, tensor<4xi64>) -> tensor<2x4x3xf32>
  return %a : tensor<2x4x3xf32>
}

// gather_nd: the index prefix becomes a row number (dot product with the strides [5, 1]).
// CHECK-LABEL: sym_name = "gather_nd"
// CHECK: "tosa.const"() <{values = dense<{{\[\[}}5, 1]]> : tensor<1x2xi32>}>
// CHECK: "tosa.reduce_sum"{{.*}} <{axis = 1 : i32}>
// CHECK: "tosa.gather"{{.*}} : (tensor<1x20x3xf32>, tensor<1x6xi32>) -> tensor<1x6x3xf32>
func.func @gather_nd(%x: tensor<4x5x3xf32>, %i: tensor<6x2xi32>) -> tensor<6x3xf32> {
  %a = "nn.gather_nd"(%x, %i) : (tensor<4x5x3xf32>, tensor<6x2xi32>) -> tensor<6x3xf32>
  return %a : tensor<6x3xf32>
}

// scatter_nd 'none': the last update naming a row wins (REDUCE_MAX of positions), no TOSA SCATTER
// (which forbids duplicate indices).
// CHECK-LABEL: sym_name = "scatter_none"
// CHECK-NOT: "tosa.scatter"
// CHECK: "tosa.equal"{{.*}} -> tensor<4x3xi1>
// CHECK: "tosa.reduce_max"{{.*}} : (tensor<4x3xi32>) -> tensor<4x1xi32>
// CHECK: "tosa.gather"
// CHECK: "tosa.select"
func.func @scatter_none(%x: tensor<4x2xf32>, %i: tensor<3x1xi32>, %u: tensor<3x2xf32>) -> tensor<4x2xf32> {
  %a = "nn.scatter_nd"(%x, %i, %u) {reduction = "none"} : (tensor<4x2xf32>, tensor<3x1xi32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  return %a : tensor<4x2xf32>
}

// scatter_nd 'add': the matching updates summed per row ([rows, updates, columns]), added to data.
// CHECK-LABEL: sym_name = "scatter_add"
// CHECK: "tosa.select"{{.*}} -> tensor<4x3x2xf32>
// CHECK: "tosa.reduce_sum"{{.*}} <{axis = 1 : i32}> : (tensor<4x3x2xf32>) -> tensor<4x1x2xf32>
// CHECK: "tosa.add"
func.func @scatter_add(%x: tensor<4x2xf32>, %i: tensor<3x1xi32>, %u: tensor<3x2xf32>) -> tensor<4x2xf32> {
  %a = "nn.scatter_nd"(%x, %i, %u) {reduction = "add"} : (tensor<4x2xf32>, tensor<3x1xi32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  return %a : tensor<4x2xf32>
}
