// RUN: %nn2tosa opt %s --passes=canonicalize | %FileCheck %s

// reshape(reshape(x)) is one reshape.
// CHECK-LABEL: sym_name = "reshapes"
// CHECK: ^bb0(%[[X:[^:]*]]:
// CHECK-NEXT: %[[R:.*]] = "nn.reshape"(%[[X]]) {shape = array<i64: 3, 4>} : (tensor<2x6xf32>) -> tensor<3x4xf32>
// CHECK-NEXT: "func.return"(%[[R]])
func.func @reshapes(%x: tensor<2x6xf32>) -> tensor<3x4xf32> {
  %a = "nn.reshape"(%x) {shape = array<i64: 12>} : (tensor<2x6xf32>) -> tensor<12xf32>
  %b = "nn.reshape"(%a) {shape = array<i64: 3, 4>} : (tensor<12xf32>) -> tensor<3x4xf32>
  return %b : tensor<3x4xf32>
}

// Two transposes compose into one.
// CHECK-LABEL: sym_name = "transposes"
// CHECK: ^bb0(%[[X:[^:]*]]:
// CHECK-NEXT: %[[T:.*]] = "nn.transpose"(%[[X]]) {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
// CHECK-NEXT: "func.return"(%[[T]])
func.func @transposes(%x: tensor<2x3x4xf32>) -> tensor<4x2x3xf32> {
  %a = "nn.transpose"(%x) {perm = array<i64: 1, 2, 0>} : (tensor<2x3x4xf32>) -> tensor<3x4x2xf32>
  %b = "nn.transpose"(%a) {perm = array<i64: 1, 2, 0>} : (tensor<3x4x2xf32>) -> tensor<4x2x3xf32>
  return %b : tensor<4x2x3xf32>
}

// A transpose pair that cancels disappears (NHWC -> NCHW -> NHWC).
// CHECK-LABEL: sym_name = "cancelling_transposes"
// CHECK: ^bb0(%[[X:[^:]*]]:
// CHECK-NEXT: "func.return"(%[[X]])
func.func @cancelling_transposes(%x: tensor<1x4x5x3xf32>) -> tensor<1x4x5x3xf32> {
  %a = "nn.transpose"(%x) {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x4x5x3xf32>) -> tensor<1x3x4x5xf32>
  %b = "nn.transpose"(%a) {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x3x4x5xf32>) -> tensor<1x4x5x3xf32>
  return %b : tensor<1x4x5x3xf32>
}

// slice(slice(x)) is one slice with the begins added.
// CHECK-LABEL: sym_name = "slices"
// CHECK: ^bb0(%[[X:[^:]*]]:
// CHECK-NEXT: %[[S:.*]] = "nn.slice"(%[[X]]) {begin = array<i64: 3, 1>, size = array<i64: 2, 2>}
// CHECK-NEXT: "func.return"(%[[S]])
func.func @slices(%x: tensor<8x4xf32>) -> tensor<2x2xf32> {
  %a = "nn.slice"(%x) {begin = array<i64: 2, 0>, size = array<i64: 5, 4>} : (tensor<8x4xf32>) -> tensor<5x4xf32>
  %b = "nn.slice"(%a) {begin = array<i64: 1, 1>, size = array<i64: 2, 2>} : (tensor<5x4xf32>) -> tensor<2x2xf32>
  return %b : tensor<2x2xf32>
}

// A concat read only by a concat along the same axis is flattened into it.
// CHECK-LABEL: sym_name = "concats"
// CHECK: ^bb0(%[[X:[^:]*]]: {{.*}}, %[[Y:[^:]*]]:
// CHECK-NEXT: %[[C:.*]] = "nn.concat"(%[[X]], %[[Y]], %[[X]]) {axis = 1 : i64} : (tensor<2x1xf32>, tensor<2x2xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
// CHECK-NEXT: "func.return"(%[[C]])
func.func @concats(%x: tensor<2x1xf32>, %y: tensor<2x2xf32>) -> tensor<2x4xf32> {
  %a = "nn.concat"(%x, %y) {axis = 1 : i64} : (tensor<2x1xf32>, tensor<2x2xf32>) -> tensor<2x3xf32>
  %b = "nn.concat"(%a, %x) {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
  return %b : tensor<2x4xf32>
}

// neg(neg(x)) and not(not(b)) are their operands.
// CHECK-LABEL: sym_name = "involutions"
// CHECK: ^bb0(%[[X:[^:]*]]: {{.*}}, %[[B:[^:]*]]:
// CHECK-NOT: "nn.
// CHECK: "func.return"(%[[X]], %[[B]])
func.func @involutions(%x: tensor<3xf32>, %b: tensor<3xi1>) -> (tensor<3xf32>, tensor<3xi1>) {
  %a = "nn.neg"(%x) : (tensor<3xf32>) -> tensor<3xf32>
  %c = "nn.neg"(%a) : (tensor<3xf32>) -> tensor<3xf32>
  %d = "nn.logical_not"(%b) : (tensor<3xi1>) -> tensor<3xi1>
  %e = "nn.logical_not"(%d) : (tensor<3xi1>) -> tensor<3xi1>
  return %c, %e : tensor<3xf32>, tensor<3xi1>
}

// A transpose that only moves unit dimensions keeps the element order: it becomes a reshape.
// CHECK-LABEL: sym_name = "unit_dims_transpose"
// CHECK: ^bb0(%[[X:[^:]*]]:
// CHECK-NEXT: %[[R:.*]] = "nn.reshape"(%[[X]]) {shape = array<i64: 1, 3, 1, 4>} : (tensor<1x1x3x4xf32>) -> tensor<1x3x1x4xf32>
// CHECK-NEXT: "func.return"(%[[R]])
func.func @unit_dims_transpose(%x: tensor<1x1x3x4xf32>) -> tensor<1x3x1x4xf32> {
  %t = "nn.transpose"(%x) {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x1x3x4xf32>) -> tensor<1x3x1x4xf32>
  return %t : tensor<1x3x1x4xf32>
}
