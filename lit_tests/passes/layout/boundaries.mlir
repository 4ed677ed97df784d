// RUN: %nn2tosa opt %s --passes=layout | %FileCheck %s

// A reshape that merges dimensions (flatten) is a barrier: the transpose is materialized in front
// of it, once, even when two ops read the pending value.
// CHECK-LABEL: sym_name = "flatten"
// CHECK: ^bb0(%[[X:[^:]*]]:
// CHECK-NEXT: %[[R:.*]] = "nn.relu"(%[[X]]) : (tensor<1x2x2x3xf32>) -> tensor<1x2x2x3xf32>
// CHECK-NEXT: %[[T:.*]] = "nn.transpose"(%[[R]]) {perm = array<i64: 0, 3, 1, 2>}
// CHECK-NEXT: %[[F:.*]] = "nn.reshape"(%[[T]]) {shape = array<i64: 1, 12>}
// CHECK-NEXT: %[[G:.*]] = "nn.reshape"(%[[T]]) {shape = array<i64: 12>}
// CHECK-NEXT: "func.return"(%[[F]], %[[G]])
func.func @flatten(%x: tensor<1x2x2x3xf32>) -> (tensor<1x12xf32>, tensor<12xf32>) {
  %t = "nn.transpose"(%x) {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x2x2x3xf32>) -> tensor<1x3x2x2xf32>
  %r = "nn.relu"(%t) : (tensor<1x3x2x2xf32>) -> tensor<1x3x2x2xf32>
  %f = "nn.reshape"(%r) {shape = array<i64: 1, 12>} : (tensor<1x3x2x2xf32>) -> tensor<1x12xf32>
  %g = "nn.reshape"(%r) {shape = array<i64: 12>} : (tensor<1x3x2x2xf32>) -> tensor<12xf32>
  return %f, %g : tensor<1x12xf32>, tensor<12xf32>
}

// A flatten read only by fully_connected with constant weights takes the transpose into the
// weights: column k of the new weights is the old column of the same element in NCHW order.
// NHWC [1, 1, 2, 2] element (w, c) has NCHW index c*2 + w, so the columns become [0, 2, 1, 3].
// CHECK-LABEL: sym_name = "flatten_into_fc"
// CHECK: ^bb0(%[[X:[^:]*]]:
// CHECK-DAG: %[[W:.*]] = "nn.constant"() {value = dense<{{\[\[}}0.000000e+00, 2.000000e+00, 1.000000e+00, 3.000000e+00]]> : tensor<1x4xf32>}
// CHECK-DAG: %[[F:.*]] = "nn.reshape"(%[[X]]) {shape = array<i64: 1, 4>}
// CHECK: %[[Y:.*]] = "nn.fully_connected"(%[[F]], %[[W]])
// CHECK-NOT: nn.transpose
// CHECK: "func.return"(%[[Y]])
func.func @flatten_into_fc(%x: tensor<1x1x2x2xf32>) -> tensor<1x1xf32> {
  %t = "nn.transpose"(%x) {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x1x2x2xf32>) -> tensor<1x2x1x2xf32>
  %f = "nn.reshape"(%t) {shape = array<i64: 1, 4>} : (tensor<1x2x1x2xf32>) -> tensor<1x4xf32>
  %w = "nn.constant"() {value = dense<[[0.0, 1.0, 2.0, 3.0]]> : tensor<1x4xf32>} : () -> tensor<1x4xf32>
  %y = "nn.fully_connected"(%f, %w) : (tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<1x1xf32>
  return %y : tensor<1x1xf32>
}

// A residual on the graph input: add(x, conv-branch) in NCHW. The NCHW -> NHWC transpose of x
// that feeds the conv already exists, so the add computes in NHWC reusing it, and the only
// transposes left are that one and one at the output.
// CHECK-LABEL: sym_name = "residual_on_input"
// CHECK: ^bb0(%[[X:[^:]*]]:
// CHECK: %[[IN:.*]] = "nn.transpose"(%[[X]]) {perm = array<i64: 0, 2, 3, 1>}
// CHECK: %[[C:.*]] = "nn.conv2d"(%[[IN]],
// CHECK: %[[A:.*]] = "nn.add"(%[[IN]], %[[C]])
// CHECK: %[[OUT:.*]] = "nn.transpose"(%[[A]]) {perm = array<i64: 0, 3, 1, 2>}
// CHECK-NOT: nn.transpose
// CHECK: "func.return"(%[[OUT]])
func.func @residual_on_input(%x: tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32> {
  %t = "nn.transpose"(%x) {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x2x3x3xf32>) -> tensor<1x3x3x2xf32>
  %w = "nn.constant"() {value = dense<1.0> : tensor<2x1x1x2xf32>} : () -> tensor<2x1x1x2xf32>
  %c = "nn.conv2d"(%t, %w) {stride = array<i64: 1, 1>, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, groups = 1 : i64} : (tensor<1x3x3x2xf32>, tensor<2x1x1x2xf32>) -> tensor<1x3x3x2xf32>
  %u = "nn.transpose"(%c) {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x3x3x2xf32>) -> tensor<1x2x3x3xf32>
  %a = "nn.add"(%x, %u) : (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  return %a : tensor<1x2x3x3xf32>
}

// An op with no layout-agnostic form (matmul) gets its operand materialized.
// CHECK-LABEL: sym_name = "matmul_barrier"
// CHECK: ^bb0(%[[X:[^:]*]]: {{.*}}, %[[Y:[^:]*]]:
// CHECK-NEXT: %[[N:.*]] = "nn.neg"(%[[X]]) : (tensor<3x2xf32>) -> tensor<3x2xf32>
// CHECK-NEXT: %[[T:.*]] = "nn.transpose"(%[[N]]) {perm = array<i64: 1, 0>}
// CHECK-NEXT: "nn.matmul"(%[[T]], %[[Y]])
func.func @matmul_barrier(%x: tensor<3x2xf32>, %y: tensor<3x4xf32>) -> tensor<2x4xf32> {
  %t = "nn.transpose"(%x) {perm = array<i64: 1, 0>} : (tensor<3x2xf32>) -> tensor<2x3xf32>
  %n = "nn.neg"(%t) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %m = "nn.matmul"(%n, %y) : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  return %m : tensor<2x4xf32>
}

// The fully_connected weights may still be transposes of a constant (as legalized from a source
// that stores them [K, O]): they are read through the transposes, and permuted the same way.
// CHECK-LABEL: sym_name = "flatten_into_fc_transposed_weights"
// CHECK: ^bb0(%[[X:[^:]*]]:
// CHECK-DAG: %[[W:.*]] = "nn.constant"() {value = dense<{{\[\[}}0.000000e+00, 2.000000e+00, 1.000000e+00, 3.000000e+00]]> : tensor<1x4xf32>}
// CHECK-DAG: %[[F:.*]] = "nn.reshape"(%[[X]]) {shape = array<i64: 1, 4>}
// CHECK: "nn.fully_connected"(%[[F]], %[[W]])
// CHECK-NOT: nn.transpose
func.func @flatten_into_fc_transposed_weights(%x: tensor<1x1x2x2xf32>) -> tensor<1x1xf32> {
  %t = "nn.transpose"(%x) {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x1x2x2xf32>) -> tensor<1x2x1x2xf32>
  %f = "nn.reshape"(%t) {shape = array<i64: 1, 4>} : (tensor<1x2x1x2xf32>) -> tensor<1x4xf32>
  %k = "nn.constant"() {value = dense<[[0.0], [1.0], [2.0], [3.0]]> : tensor<4x1xf32>} : () -> tensor<4x1xf32>
  %w = "nn.transpose"(%k) {perm = array<i64: 1, 0>} : (tensor<4x1xf32>) -> tensor<1x4xf32>
  %y = "nn.fully_connected"(%f, %w) : (tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<1x1xf32>
  return %y : tensor<1x1xf32>
}
