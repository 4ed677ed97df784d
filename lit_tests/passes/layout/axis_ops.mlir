// RUN: %nn2tosa opt %s --passes=layout | %FileCheck %s

// A pending NHWC -> NCHW transpose (perm [0, 3, 1, 2]: logical dim i is physical dim P[i] with
// P = [0, 3, 1, 2]) moves below axis ops, which get their axes, pads and begins permuted; it is
// materialized once, at the output.

// concat along C (logical axis 1) becomes a concat along physical axis 3.
// CHECK-LABEL: sym_name = "concat"
// CHECK: ^bb0(%[[X:[^:]*]]: {{.*}}, %[[Y:[^:]*]]:
// CHECK-NEXT: %[[C:.*]] = "nn.concat"(%[[X]], %[[Y]]) {axis = 3 : i64} : (tensor<1x4x5x2xf32>, tensor<1x4x5x3xf32>) -> tensor<1x4x5x5xf32>
// CHECK-NEXT: %[[T:.*]] = "nn.transpose"(%[[C]]) {perm = array<i64: 0, 3, 1, 2>}
// CHECK-NEXT: "func.return"(%[[T]])
func.func @concat(%x: tensor<1x4x5x2xf32>, %y: tensor<1x4x5x3xf32>) -> tensor<1x5x4x5xf32> {
  %a = "nn.transpose"(%x) {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x4x5x2xf32>) -> tensor<1x2x4x5xf32>
  %b = "nn.transpose"(%y) {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x4x5x3xf32>) -> tensor<1x3x4x5xf32>
  %c = "nn.concat"(%a, %b) {axis = 1 : i64} : (tensor<1x2x4x5xf32>, tensor<1x3x4x5xf32>) -> tensor<1x5x4x5xf32>
  return %c : tensor<1x5x4x5xf32>
}

// pad [N, C, H, W] pairs -> [N, H, W, C] pairs.
// CHECK-LABEL: sym_name = "pad"
// CHECK: "nn.pad"(%{{[^)]*}}) {mode = "constant", pads = array<i64: 0, 0, 3, 4, 5, 6, 1, 2>, value = 0.000000e+00 : f64} : (tensor<1x4x5x2xf32>) -> tensor<1x11x16x5xf32>
// CHECK-NEXT: "nn.transpose"
func.func @pad(%x: tensor<1x4x5x2xf32>) -> tensor<1x5x11x16xf32> {
  %a = "nn.transpose"(%x) {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x4x5x2xf32>) -> tensor<1x2x4x5xf32>
  %p = "nn.pad"(%a) {pads = array<i64: 0, 0, 1, 2, 3, 4, 5, 6>, mode = "constant", value = 0.0 : f64} : (tensor<1x2x4x5xf32>) -> tensor<1x5x11x16xf32>
  return %p : tensor<1x5x11x16xf32>
}

// slice begin/size follow their dimensions; softmax's axis too. The transpose left at the output
// only moves a unit dimension ([1, 2, 3, 1] -> [1, 1, 2, 3]), so it is materialized as a reshape.
// CHECK-LABEL: sym_name = "slice_softmax"
// CHECK: "nn.slice"(%{{[^)]*}}) {begin = array<i64: 0, 1, 2, 0>, size = array<i64: 1, 2, 3, 1>} : (tensor<1x4x5x2xf32>) -> tensor<1x2x3x1xf32>
// CHECK-NEXT: %[[S:.*]] = "nn.softmax"(%{{[^)]*}}) {axis = 2 : i64
// CHECK-NEXT: "nn.reshape"(%[[S]]) {shape = array<i64: 1, 1, 2, 3>}
func.func @slice_softmax(%x: tensor<1x4x5x2xf32>) -> tensor<1x1x2x3xf32> {
  %a = "nn.transpose"(%x) {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x4x5x2xf32>) -> tensor<1x2x4x5xf32>
  %s = "nn.slice"(%a) {begin = array<i64: 0, 0, 1, 2>, size = array<i64: 1, 1, 2, 3>} : (tensor<1x2x4x5xf32>) -> tensor<1x1x2x3xf32>
  %m = "nn.softmax"(%s) {axis = 3 : i64, beta = 1.0 : f64} : (tensor<1x1x2x3xf32>) -> tensor<1x1x2x3xf32>
  return %m : tensor<1x1x2x3xf32>
}

// A mean over H and W without keep_dims leaves [N, C]: what remains of the perm is the identity,
// so no transpose is left at all.
// CHECK-LABEL: sym_name = "global_mean"
// CHECK: ^bb0(%[[X:[^:]*]]:
// CHECK-NEXT: %[[M:.*]] = "nn.reduce_mean"(%[[X]]) {axes = array<i64: 1, 2>, keep_dims = false} : (tensor<2x4x5x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: "func.return"(%[[M]])
func.func @global_mean(%x: tensor<2x4x5x3xf32>) -> tensor<2x3xf32> {
  %a = "nn.transpose"(%x) {perm = array<i64: 0, 3, 1, 2>} : (tensor<2x4x5x3xf32>) -> tensor<2x3x4x5xf32>
  %m = "nn.reduce_mean"(%a) {axes = array<i64: 2, 3>, keep_dims = false} : (tensor<2x3x4x5xf32>) -> tensor<2x3xf32>
  return %m : tensor<2x3xf32>
}

// keep_dims then a reshape that drops the unit dims: the reshape applies to the physical tensor.
// CHECK-LABEL: sym_name = "squeeze"
// CHECK: ^bb0(%[[X:[^:]*]]:
// CHECK-NEXT: %[[M:.*]] = "nn.reduce_max"(%[[X]]) {axes = array<i64: 1, 2>, keep_dims = true} : (tensor<2x4x5x3xf32>) -> tensor<2x1x1x3xf32>
// CHECK-NEXT: %[[R:.*]] = "nn.reshape"(%[[M]]) {shape = array<i64: 2, 3>} : (tensor<2x1x1x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: "func.return"(%[[R]])
func.func @squeeze(%x: tensor<2x4x5x3xf32>) -> tensor<2x3xf32> {
  %a = "nn.transpose"(%x) {perm = array<i64: 0, 3, 1, 2>} : (tensor<2x4x5x3xf32>) -> tensor<2x3x4x5xf32>
  %m = "nn.reduce_max"(%a) {axes = array<i64: 2, 3>, keep_dims = true} : (tensor<2x3x4x5xf32>) -> tensor<2x3x1x1xf32>
  %r = "nn.reshape"(%m) {shape = array<i64: 2, 3>} : (tensor<2x3x1x1xf32>) -> tensor<2x3xf32>
  return %r : tensor<2x3xf32>
}
