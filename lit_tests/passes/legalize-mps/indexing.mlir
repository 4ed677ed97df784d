// RUN: %nn2tosa opt %s --passes=legalize-mps | %FileCheck %s

// Indexing nodes as nn.gather / gather_nd / scatter_nd with PyTorch's advanced indexing.

// index_select and embedding are gathers; x[:, i] wraps negative run-time indices first.
// CHECK-LABEL: sym_name = "gathers"
// CHECK: ^bb0(%[[X:[^:]*]]: {{[^%]*}}, %[[I:[^:]*]]:
// CHECK: %[[SEL:.*]] = "nn.gather"(%[[X]], %[[I]]) {axis = 1 : i64} : (tensor<4x5x3xf32>, tensor<2xi64>) -> tensor<4x2x3xf32>
// CHECK-NEXT: %[[EMB:.*]] = "nn.gather"(%[[X]], %[[I]]) {axis = 0 : i64} : (tensor<4x5x3xf32>, tensor<2xi64>) -> tensor<2x5x3xf32>
// CHECK-NEXT: %[[ZERO:.*]] = "nn.constant"() {value = dense<0> : tensor<i64>}
// CHECK-NEXT: %[[NEG:.*]] = "nn.less"(%[[I]], %[[ZERO]])
// CHECK-NEXT: %[[SIZE:.*]] = "nn.constant"() {value = dense<5> : tensor<i64>}
// CHECK-NEXT: %[[UP:.*]] = "nn.add"(%[[I]], %[[SIZE]])
// CHECK-NEXT: %[[W:.*]] = "nn.select"(%[[NEG]], %[[UP]], %[[I]])
// CHECK-NEXT: %[[IDX:.*]] = "nn.gather"(%[[X]], %[[W]]) {axis = 1 : i64}
// CHECK-NEXT: "func.return"(%[[SEL]], %[[EMB]], %[[IDX]])
func.func @gathers(%x: tensor<4x5x3xf32>, %i: tensor<2xi64>) -> (tensor<4x2x3xf32>, tensor<2x5x3xf32>, tensor<4x2x3xf32>) {
  %0 = "mps.IndexSelect"(%x, %i) {dim = -2 : i32, operandSegmentSizes = array<i32: 1, 1>} : (tensor<4x5x3xf32>, tensor<2xi64>) -> tensor<4x2x3xf32>
  %1 = "mps.Embedding"(%x, %i) {padding_idx = -1 : i32, scale_grad_by_freq = false, sparse = false, operandSegmentSizes = array<i32: 1, 1>} : (tensor<4x5x3xf32>, tensor<2xi64>) -> tensor<2x5x3xf32>
  %2 = "mps.IndexTensor"(%x, %i) {absent_indices_id = array<i32: 0>, operandSegmentSizes = array<i32: 1, 1>} : (tensor<4x5x3xf32>, tensor<2xi64>) -> tensor<4x2x3xf32>
  return %0, %1, %2 : tensor<4x2x3xf32>, tensor<2x5x3xf32>, tensor<4x2x3xf32>
}

// x[i, :, j] with constant indices (no wrapping needed): the indexed dimensions move first, their
// coordinates stack into [B, 2] for gather_nd; non-adjacent indices put B first in the result.
// CHECK-LABEL: sym_name = "gather_nd"
// CHECK: ^bb0(%[[X:[^:]*]]:
// CHECK: %[[I:.*]] = "nn.reshape"(%{{.*}}) {shape = array<i64: 2, 1>}
// CHECK-NEXT: %[[J:.*]] = "nn.reshape"(%{{.*}}) {shape = array<i64: 2, 1>}
// CHECK-NEXT: %[[C:.*]] = "nn.concat"(%[[I]], %[[J]]) {axis = 1 : i64}
// CHECK-NEXT: %[[T:.*]] = "nn.transpose"(%[[X]]) {perm = array<i64: 0, 2, 1>} : (tensor<4x5x3xf32>) -> tensor<4x3x5xf32>
// CHECK-NEXT: %[[G:.*]] = "nn.gather_nd"(%[[T]], %[[C]]) : (tensor<4x3x5xf32>, tensor<2x2xi64>) -> tensor<2x5xf32>
// CHECK-NEXT: "func.return"(%[[G]])
func.func @gather_nd(%x: tensor<4x5x3xf32>) -> tensor<2x5xf32> {
  %i = "mps.constant"() {value = dense<[0, 3]> : tensor<2xi64>} : () -> tensor<2xi64>
  %j = "mps.constant"() {value = dense<[2, 1]> : tensor<2xi64>} : () -> tensor<2xi64>
  %0 = "mps.IndexTensor"(%x, %i, %j) {absent_indices_id = array<i32: 1>, operandSegmentSizes = array<i32: 1, 2>} : (tensor<4x5x3xf32>, tensor<2xi64>, tensor<2xi64>) -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}

// index_put: scatter_nd of the values at the coordinates (the backend drops accumulate=True: the
// file says replace). scatter (slice_scatter's form) with a constant index: constant coordinates,
// and only src[:2, :2] is used.
// CHECK-LABEL: sym_name = "scatters"
// CHECK: ^bb0(%[[X:[^:]*]]: {{[^%]*}}, %[[I:[^:]*]]: {{[^%]*}}, %[[V:[^:]*]]:
// CHECK: %[[C:.*]] = "nn.reshape"(%{{.*}}) {shape = array<i64: 2, 1>}
// CHECK-NEXT: %[[P:.*]] = "nn.scatter_nd"(%[[X]], %[[C]], %[[V]]) {reduction = "none"} : (tensor<3x6xf32>, tensor<2x1xi64>, tensor<2x6xf32>) -> tensor<3x6xf32>
// CHECK-NEXT: %[[COORDS:.*]] = "nn.constant"() {value = dense<{{\[\[\[}}0, 1], [0, 3]], {{\[\[}}1, 1], [1, 3]]]> : tensor<2x2x2xi64>}
// CHECK-NEXT: %[[SRC:.*]] = "nn.slice"(%[[V]]) {begin = array<i64: 0, 0>, size = array<i64: 2, 2>}
// CHECK: "nn.scatter_nd"(%[[X]], %[[COORDS]], %{{.*}}) {reduction = "none"}
func.func @scatters(%x: tensor<3x6xf32>, %i: tensor<2xi64>, %v: tensor<2x6xf32>) -> (tensor<3x6xf32>, tensor<3x6xf32>) {
  %0 = "mps.IndexPut"(%x, %i, %v) {values_shape = array<i32>, operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<3x6xf32>, tensor<2xi64>, tensor<2x6xf32>) -> tensor<3x6xf32>
  %idx = "mps.constant"() {value = dense<[[1, 3], [1, 3]]> : tensor<2x2xi64>} : () -> tensor<2x2xi64>
  %1 = "mps.Scatter"(%x, %idx, %v) {dim = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<3x6xf32>, tensor<2x2xi64>, tensor<2x6xf32>) -> tensor<3x6xf32>
  return %0, %1 : tensor<3x6xf32>, tensor<3x6xf32>
}
