// RUN: %nn2tosa opt %s --passes=legalize-mps | %FileCheck %s

// Shape and data-movement nodes: reshapes to the declared shape, PyTorch's dims and slice bounds,
// pixel shuffle as reshape + transpose, constant_pad_nd's pairs from the last dimension backwards.

// view(-1, 2), squeeze and unsqueeze are reshapes to the declared shape; permute is a transpose.
// CHECK-LABEL: sym_name = "views"
// CHECK: ^bb0(%[[X:[^:]*]]:
// CHECK: %[[V:.*]] = "nn.reshape"(%[[X]]) {shape = array<i64: 12, 2>} : (tensor<2x3x4xf32>) -> tensor<12x2xf32>
// CHECK-NEXT: %[[U:.*]] = "nn.reshape"(%[[X]]) {shape = array<i64: 2, 3, 1, 4>}
// CHECK-NEXT: %[[P:.*]] = "nn.transpose"(%[[X]]) {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
// CHECK-NEXT: %[[E:.*]] = "nn.broadcast_to"(%[[U]]) {shape = array<i64: 2, 3, 5, 4>}
// CHECK-NEXT: "func.return"(%[[V]], %[[P]], %[[E]])
func.func @views(%x: tensor<2x3x4xf32>) -> (tensor<12x2xf32>, tensor<4x2x3xf32>, tensor<2x3x5x4xf32>) {
  %0 = "mps.View"(%x) {num_dims = 2 : i32, shape = array<i32: -1, 2>} : (tensor<2x3x4xf32>) -> tensor<12x2xf32>
  %1 = "mps.Unsqueeze"(%x) {dim = -2 : i32} : (tensor<2x3x4xf32>) -> tensor<2x3x1x4xf32>
  %2 = "mps.Permute"(%x) {num_dims = 3 : i32, perm = array<i32: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  %3 = "mps.Expand"(%1) {num_dims = 4 : i32, shape = array<i32: -1, -1, 5, -1>} : (tensor<2x3x1x4xf32>) -> tensor<2x3x5x4xf32>
  return %0, %2, %3 : tensor<12x2xf32>, tensor<4x2x3xf32>, tensor<2x3x5x4xf32>
}

// cat (negative dim), split_with_sizes, slice (step 1: nn.slice; else nn.strided_slice; PyTorch's
// clamped bounds), select (negative index).
// CHECK-LABEL: sym_name = "pieces"
// CHECK: ^bb0(%[[X:[^:]*]]: {{[^%]*}}, %[[Y:[^:]*]]:
// CHECK: %[[C:.*]] = "nn.concat"(%[[X]], %[[Y]]) {axis = 2 : i64} : (tensor<2x3x7xf32>, tensor<2x3x1xf32>) -> tensor<2x3x8xf32>
// CHECK-NEXT: %[[S:.*]]:3 = "nn.split"(%[[X]]) {axis = 2 : i64, sizes = array<i64: 1, 4, 2>}
// CHECK-NEXT: %[[SL:.*]] = "nn.slice"(%[[X]]) {begin = array<i64: 0, 1, 0>, size = array<i64: 2, 2, 7>}
// CHECK-NEXT: %[[ST:.*]] = "nn.strided_slice"(%[[X]]) {begin = array<i64: 0, 0, 1>, end = array<i64: 2, 3, 7>, strides = array<i64: 1, 1, 2>} : (tensor<2x3x7xf32>) -> tensor<2x3x3xf32>
// CHECK-NEXT: %[[ONE:.*]] = "nn.slice"(%[[X]]) {begin = array<i64: 0, 0, 6>, size = array<i64: 2, 3, 1>}
// CHECK-NEXT: %[[SE:.*]] = "nn.reshape"(%[[ONE]]) {shape = array<i64: 2, 3>}
// CHECK-NEXT: "func.return"(%[[C]], %[[S]]#1, %[[SL]], %[[ST]], %[[SE]])
func.func @pieces(%x: tensor<2x3x7xf32>, %y: tensor<2x3x1xf32>) -> (tensor<2x3x8xf32>, tensor<2x3x4xf32>, tensor<2x2x7xf32>, tensor<2x3x3xf32>, tensor<2x3xf32>) {
  %0 = "mps.Cat"(%x, %y) {dim = -1 : i32} : (tensor<2x3x7xf32>, tensor<2x3x1xf32>) -> tensor<2x3x8xf32>
  %1:3 = "mps.SplitWithSizes"(%x) {dim = 2 : i32, split_sizes = array<i32: 1, 4, 2>} : (tensor<2x3x7xf32>) -> (tensor<2x3x1xf32>, tensor<2x3x4xf32>, tensor<2x3x2xf32>)
  %2 = "mps.Slice"(%x) {dim = 1 : i64, start = -2 : i64, end = 9223372036854775807 : i64, step = 1 : i64} : (tensor<2x3x7xf32>) -> tensor<2x2x7xf32>
  %3 = "mps.Slice"(%x) {dim = 2 : i64, start = 1 : i64, end = 7 : i64, step = 2 : i64} : (tensor<2x3x7xf32>) -> tensor<2x3x3xf32>
  %4 = "mps.Select"(%x) {dim = 2 : i32, index = -1 : i32} : (tensor<2x3x7xf32>) -> tensor<2x3xf32>
  return %0, %1#1, %2, %3, %4 : tensor<2x3x8xf32>, tensor<2x3x4xf32>, tensor<2x2x7xf32>, tensor<2x3x3xf32>, tensor<2x3xf32>
}

// pad [1, 2, 0, 1]: W gets (1, 2), H gets (0, 1); a negative amount crops first.
// pixel_shuffle by 2 of [1, 8, 2, 3]: [1, C=2, r, r, H, W] -> [1, C, H, r, W, r] -> [1, 2, 4, 6].
// CHECK-LABEL: sym_name = "pad_shuffle"
// CHECK: ^bb0(%[[X:[^:]*]]:
// CHECK: %[[P:.*]] = "nn.pad"(%[[X]]) {mode = "constant", pads = array<i64: 0, 0, 0, 0, 0, 1, 1, 2>, value = 5.000000e-01 : f64} : (tensor<1x8x2x3xf32>) -> tensor<1x8x3x6xf32>
// CHECK-NEXT: %[[CROP:.*]] = "nn.slice"(%[[X]]) {begin = array<i64: 0, 0, 0, 1>, size = array<i64: 1, 8, 2, 2>}
// CHECK-NEXT: %[[PC:.*]] = "nn.pad"(%[[CROP]]) {mode = "constant", pads = array<i64: 0, 0, 0, 0, 1, 0, 0, 0>
// CHECK-NEXT: %[[A:.*]] = "nn.reshape"(%[[X]]) {shape = array<i64: 1, 2, 2, 2, 2, 3>}
// CHECK-NEXT: %[[B:.*]] = "nn.transpose"(%[[A]]) {perm = array<i64: 0, 1, 4, 2, 5, 3>}
// CHECK-NEXT: %[[PS:.*]] = "nn.reshape"(%[[B]]) {shape = array<i64: 1, 2, 4, 6>}
// CHECK-NEXT: "func.return"(%[[P]], %[[PC]], %[[PS]])
func.func @pad_shuffle(%x: tensor<1x8x2x3xf32>) -> (tensor<1x8x3x6xf32>, tensor<1x8x3x2xf32>, tensor<1x2x4x6xf32>) {
  %0 = "mps.ConstantPadND"(%x) {pad = array<i32: 1, 2, 0, 1>, value = 0.5 : f32} : (tensor<1x8x2x3xf32>) -> tensor<1x8x3x6xf32>
  %1 = "mps.ConstantPadND"(%x) {pad = array<i32: -1, 0, 1, 0>, value = 0.0 : f32} : (tensor<1x8x2x3xf32>) -> tensor<1x8x3x2xf32>
  %2 = "mps.PixelShuffle"(%x) {upscale_factor = 2 : i32} : (tensor<1x8x2x3xf32>) -> tensor<1x2x4x6xf32>
  return %0, %1, %2 : tensor<1x8x3x6xf32>, tensor<1x8x3x2xf32>, tensor<1x2x4x6xf32>
}

// The fp16 boundary casts (in place in the file) and explicit casts: float -> int truncates toward zero.
// CHECK-LABEL: sym_name = "casts"
// CHECK: ^bb0(%[[X:[^:]*]]:
// CHECK: %[[H:.*]] = "nn.cast"(%[[X]]) : (tensor<4xf32>) -> tensor<4xf16>
// CHECK-NEXT: %[[SG:.*]] = "nn.sign"(%[[X]])
// CHECK-NEXT: %[[AB:.*]] = "nn.abs"(%[[X]])
// CHECK-NEXT: %[[FL:.*]] = "nn.floor"(%[[AB]])
// CHECK-NEXT: %[[T:.*]] = "nn.mul"(%[[SG]], %[[FL]])
// CHECK-NEXT: %[[I:.*]] = "nn.cast"(%[[T]]) : (tensor<4xf32>) -> tensor<4xi32>
// CHECK-NEXT: "func.return"(%[[H]], %[[I]])
func.func @casts(%x: tensor<4xf32>) -> (tensor<4xf16>, tensor<4xi32>) {
  %0 = "mps.Cast"(%x) {dtype = "mps_data_type_float16"} : (tensor<4xf32>) -> tensor<4xf16>
  %1 = "mps.Cast"(%x) {dtype = "mps_data_type_int32"} : (tensor<4xf32>) -> tensor<4xi32>
  return %0, %1 : tensor<4xf16>, tensor<4xi32>
}

// full, full_like and arange fold to constants (static shapes); mps.constant becomes nn.constant.
// CHECK-LABEL: sym_name = "constants"
// CHECK: %[[F:.*]] = "nn.constant"() {value = dense<1.500000e+00> : tensor<2x3xf32>}
// CHECK-NEXT: %[[FL:.*]] = "nn.constant"() {value = dense<2> : tensor<4xi32>}
// CHECK-NEXT: %[[AR:.*]] = "nn.constant"() {value = dense<[0, 1, 2]> : tensor<3xi64>}
// CHECK-NEXT: %[[AF:.*]] = "nn.constant"() {value = dense<[2.500000e+00, 3.000000e+00, 3.500000e+00]> : tensor<3xf32>}
// CHECK-NEXT: "func.return"(%[[F]], %[[FL]], %[[AR]], %[[AF]])
func.func @constants(%x: tensor<4xf32>) -> (tensor<2x3xf32>, tensor<4xi32>, tensor<3xi64>, tensor<3xf32>) {
  %0 = "mps.Full"() {dtype = "mps_data_type_float32", fill_value = 1.5 : f32, shape = array<i32: 2, 3>} : () -> tensor<2x3xf32>
  %1 = "mps.FullLike"(%x) {dtype = "mps_data_type_int32", fill_value = 2.0 : f32, shape = array<i32>} : (tensor<4xf32>) -> tensor<4xi32>
  %2 = "mps.Arange"() {dtype = "mps_data_type_int64", end = 3.0 : f32, start = 0.5 : f32, step = 1.0 : f32} : () -> tensor<3xi64>
  %3 = "mps.Arange"() {dtype = "mps_data_type_float32", end = 4.0 : f32, start = 2.5 : f32, step = 0.5 : f32} : () -> tensor<3xf32>
  return %0, %1, %2, %3 : tensor<2x3xf32>, tensor<4xi32>, tensor<3xi64>, tensor<3xf32>
}
