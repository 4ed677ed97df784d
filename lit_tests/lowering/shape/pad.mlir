// RUN: %nn2tosa opt %s --passes=lower-to-tosa,cse,dce | %FileCheck %s

// constant: TOSA PAD with the fill value as a constant operand.
// CHECK-LABEL: sym_name = "constant"
// CHECK-DAG: %[[P:.*]] = "tosa.const_shape"() <{values = dense<[1, 0, 2, 3]> : tensor<4xindex>}>
// CHECK-DAG: %[[V:.*]] = "tosa.const"() <{values = dense<-1.500000e+00> : tensor<1xf32>}>
// CHECK: "tosa.pad"(%{{.*}}, %[[P]], %[[V]]) : (tensor<2x3xf32>, !tosa.shape<4>, tensor<1xf32>) -> tensor<3x8xf32>
func.func @constant(%x: tensor<2x3xf32>) -> tensor<3x8xf32> {
  %a = "nn.pad"(%x) {pads = array<i64: 1, 0, 2, 3>, mode = "constant", value = -1.5 : f64} : (tensor<2x3xf32>) -> tensor<3x8xf32>
  return %a : tensor<3x8xf32>
}

// Rank 4: one PAD of the tensor's rank (TOSA limits PAD's rank to the level's MAX_RANK), no
// reshaped views around it.
// CHECK-LABEL: sym_name = "constant_rank4"
// CHECK-NOT: "tosa.reshape"
// CHECK: "tosa.pad"{{.*}} : (tensor<2x3x4x5xf32>, !tosa.shape<8>, tensor<1xf32>) -> tensor<2x4x4x5xf32>
// CHECK-NOT: "tosa.reshape"
// CHECK: "func.return"
func.func @constant_rank4(%x: tensor<2x3x4x5xf32>) -> tensor<2x4x4x5xf32> {
  %a = "nn.pad"(%x) {pads = array<i64: 0, 0, 1, 0, 0, 0, 0, 0>, mode = "constant", value = 0.0 : f64} : (tensor<2x3x4x5xf32>) -> tensor<2x4x4x5xf32>
  return %a : tensor<2x4x4x5xf32>
}

// reflect by (2, 1) reads indices 2 1 0 1 2 3 2: runs of consecutive indices, each a slice
// (reversed where the run descends), joined by CONCAT; no PAD.
// CHECK-LABEL: sym_name = "reflect"
// CHECK-NOT: "tosa.pad"
// CHECK: %[[L:.*]] = "tosa.slice"{{.*}} -> tensor<3xf32>
// CHECK: %[[LR:.*]] = "tosa.reverse"(%[[L]]) <{axis = 0 : i32}>
// CHECK: %[[M:.*]] = "tosa.slice"{{.*}} -> tensor<3xf32>
// CHECK: %[[R:.*]] = "tosa.slice"{{.*}} -> tensor<1xf32>
// CHECK: "tosa.concat"(%[[LR]], %[[M]], %[[R]]) <{axis = 0 : i32}>
func.func @reflect(%x: tensor<4xf32>) -> tensor<7xf32> {
  %a = "nn.pad"(%x) {pads = array<i64: 2, 1>, mode = "reflect", value = 0.0 : f64} : (tensor<4xf32>) -> tensor<7xf32>
  return %a : tensor<7xf32>
}

// edge repeats the border element: a size-1 slice tiled, in front of x itself.
// CHECK-LABEL: sym_name = "edge"
// CHECK: ^bb0(%[[X:[^:]*]]:
// CHECK: %[[B:.*]] = "tosa.slice"(%[[X]], {{.*}} -> tensor<1xi8>
// CHECK: %[[T:.*]] = "tosa.tile"(%[[B]], {{.*}} -> tensor<3xi8>
// CHECK: "tosa.concat"(%[[T]], %[[X]]) <{axis = 0 : i32}>
func.func @edge(%x: tensor<4xi8>) -> tensor<7xi8> {
  %a = "nn.pad"(%x) {pads = array<i64: 3, 0>, mode = "edge", value = 0.0 : f64} : (tensor<4xi8>) -> tensor<7xi8>
  return %a : tensor<7xi8>
}

// symmetric repeats the edge in the mirror: [1 2 3] by (2, 0) is 2 1 | 1 2 3.
// CHECK-LABEL: sym_name = "symmetric"
// CHECK: %[[L:.*]] = "tosa.slice"{{.*}} -> tensor<2xf32>
// CHECK: "tosa.reverse"(%[[L]])
func.func @symmetric(%x: tensor<3xf32>) -> tensor<5xf32> {
  %a = "nn.pad"(%x) {pads = array<i64: 2, 0>, mode = "symmetric", value = 0.0 : f64} : (tensor<3xf32>) -> tensor<5xf32>
  return %a : tensor<5xf32>
}
