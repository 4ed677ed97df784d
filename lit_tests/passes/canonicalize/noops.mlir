// RUN: %nn2tosa opt %s --passes=canonicalize | %FileCheck %s

// Ops that return their operand unchanged disappear; the function returns its argument.
// CHECK-LABEL: sym_name = "identity"
// CHECK: ^bb0(%[[X:[^:]*]]:
// CHECK-NOT: "nn.
// CHECK: "func.return"(%[[X]])
func.func @identity(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %a = "nn.identity"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %b = "nn.reshape"(%a) {shape = array<i64: 2, 3>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %c = "nn.transpose"(%b) {perm = array<i64: 0, 1>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %d = "nn.cast"(%c) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %e = "nn.broadcast_to"(%d) {shape = array<i64: 2, 3>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %e : tensor<2x3xf32>
}

// CHECK-LABEL: sym_name = "data_movement"
// CHECK: ^bb0(%[[X:[^:]*]]:
// CHECK-NOT: "nn.
// CHECK: "func.return"(%[[X]])
func.func @data_movement(%x: tensor<2x1xf32>) -> tensor<2x1xf32> {
  %a = "nn.pad"(%x) {pads = array<i64: 0, 0, 0, 0>, mode = "constant", value = 0.0 : f64} : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %b = "nn.slice"(%a) {begin = array<i64: 0, 0>, size = array<i64: 2, 1>} : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %c = "nn.strided_slice"(%b) {begin = array<i64: 0, 0>, end = array<i64: 2, 1>, strides = array<i64: 1, 1>} : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %d = "nn.tile"(%c) {multiples = array<i64: 1, 1>} : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %e = "nn.concat"(%d) {axis = 0 : i64} : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %f = "nn.split"(%e) {axis = 1 : i64, sizes = array<i64: 1>} : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %g = "nn.reverse"(%f) {axes = array<i64: 1>} : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %h = "nn.reduce_sum"(%g) {axes = array<i64: 1>, keep_dims = true} : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %i = "nn.clamp"(%h) {min = 0xFFF0000000000000 : f64, max = 0x7FF0000000000000 : f64} : (tensor<2x1xf32>) -> tensor<2x1xf32>
  return %i : tensor<2x1xf32>
}

// Look-alikes that do change their operand stay: a reverse over a real axis, a reduction over one,
// a pad that adds elements, a stride -1 slice.
// CHECK-LABEL: sym_name = "not_noops"
// CHECK: ^bb0(%[[X:[^:]*]]:
// CHECK: "nn.reverse"
// CHECK: "nn.reduce_sum"
// CHECK: "nn.pad"
// CHECK: "nn.strided_slice"
func.func @not_noops(%x: tensor<2x1xf32>) -> (tensor<2x1xf32>, tensor<1x1xf32>, tensor<4x1xf32>, tensor<2x1xf32>) {
  %a = "nn.reverse"(%x) {axes = array<i64: 0>} : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %b = "nn.reduce_sum"(%x) {axes = array<i64: 0>, keep_dims = true} : (tensor<2x1xf32>) -> tensor<1x1xf32>
  %c = "nn.pad"(%x) {pads = array<i64: 1, 1, 0, 0>, mode = "constant", value = 0.0 : f64} : (tensor<2x1xf32>) -> tensor<4x1xf32>
  %d = "nn.strided_slice"(%x) {begin = array<i64: 1, 0>, end = array<i64: -3, 1>, strides = array<i64: -1, 1>} : (tensor<2x1xf32>) -> tensor<2x1xf32>
  return %a, %b, %c, %d : tensor<2x1xf32>, tensor<1x1xf32>, tensor<4x1xf32>, tensor<2x1xf32>
}

// A cast to another type is a conversion, not a no-op.
// CHECK-LABEL: sym_name = "real_cast"
// CHECK: ^bb0(%[[X:[^:]*]]:
// CHECK: "nn.cast"(%[[X]]) : (tensor<2xf32>) -> tensor<2xf16>
func.func @real_cast(%x: tensor<2xf32>) -> tensor<2xf16> {
  %a = "nn.cast"(%x) : (tensor<2xf32>) -> tensor<2xf16>
  return %a : tensor<2xf16>
}

// 1x1 stride-1 pooling without padding is a copy.
// CHECK-LABEL: sym_name = "unit_pool"
// CHECK: ^bb0(%[[X:[^:]*]]:
// CHECK-NOT: pool
// CHECK: "func.return"(%[[X]])
func.func @unit_pool(%x: tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32> {
  %a = "nn.max_pool2d"(%x) {kernel = array<i64: 1, 1>, stride = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>} : (tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32>
  %b = "nn.avg_pool2d"(%a) {kernel = array<i64: 1, 1>, stride = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, count_pad = array<i64: 0, 0, 0, 0>, divisor = 0 : i64} : (tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32>
  return %b : tensor<1x4x4x2xf32>
}
