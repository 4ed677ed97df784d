// RUN: %nn2tosa opt %s --passes=lower-to-tosa,cse,dce | %FileCheck %s

// broadcast_to: a reshape to the result's rank, then TILE over the unit dimensions.
// CHECK-LABEL: sym_name = "broadcast_to"
// CHECK: %[[R:.*]] = "tosa.reshape"(%{{.*}}) : (tensor<3x1xf32>, !tosa.shape<3>) -> tensor<1x3x1xf32>
// CHECK: %[[M:.*]] = "tosa.const_shape"() <{values = dense<[2, 1, 5]> : tensor<3xindex>}>
// CHECK: "tosa.tile"(%[[R]], %[[M]]) : (tensor<1x3x1xf32>, !tosa.shape<3>) -> tensor<2x3x5xf32>
func.func @broadcast_to(%x: tensor<3x1xf32>) -> tensor<2x3x5xf32> {
  %a = "nn.broadcast_to"(%x) {shape = array<i64: 2, 3, 5>} : (tensor<3x1xf32>) -> tensor<2x3x5xf32>
  return %a : tensor<2x3x5xf32>
}

// concat is TOSA CONCAT; split is one SLICE per piece.
// CHECK-LABEL: sym_name = "concat_split"
// CHECK: "tosa.concat"(%{{.*}}, %{{.*}}) <{axis = 1 : i32}> : (tensor<2x3xi8>, tensor<2x1xi8>) -> tensor<2x4xi8>
// CHECK: "tosa.const_shape"() <{values = dense<[0, 1]> : tensor<2xindex>}>
// CHECK: "tosa.slice"{{.*}} -> tensor<2x2xi8>
func.func @concat_split(%x: tensor<2x3xi8>, %y: tensor<2x1xi8>) -> (tensor<2x4xi8>, tensor<2x1xi8>, tensor<2x2xi8>) {
  %a = "nn.concat"(%x, %y) {axis = 1 : i64} : (tensor<2x3xi8>, tensor<2x1xi8>) -> tensor<2x4xi8>
  %b:2 = "nn.split"(%x) {axis = 1 : i64, sizes = array<i64: 1, 2>} : (tensor<2x3xi8>) -> (tensor<2x1xi8>, tensor<2x2xi8>)
  return %a, %b#0, %b#1 : tensor<2x4xi8>, tensor<2x1xi8>, tensor<2x2xi8>
}

// slice: start and size as shape operands; tile; reverse over two axes is two REVERSEs.
// CHECK-LABEL: sym_name = "slice_tile_reverse"
// CHECK: "tosa.slice"{{.*}} : (tensor<4x5xf16>, !tosa.shape<2>, !tosa.shape<2>) -> tensor<2x3xf16>
// CHECK: "tosa.tile"{{.*}} -> tensor<8x5xf16>
// CHECK: %[[R0:.*]] = "tosa.reverse"(%{{.*}}) <{axis = 0 : i32}>
// CHECK: "tosa.reverse"(%[[R0]]) <{axis = 1 : i32}>
func.func @slice_tile_reverse(%x: tensor<4x5xf16>) -> (tensor<2x3xf16>, tensor<8x5xf16>, tensor<4x5xf16>) {
  %a = "nn.slice"(%x) {begin = array<i64: 1, 2>, size = array<i64: 2, 3>} : (tensor<4x5xf16>) -> tensor<2x3xf16>
  %b = "nn.tile"(%x) {multiples = array<i64: 2, 1>} : (tensor<4x5xf16>) -> tensor<8x5xf16>
  %c = "nn.reverse"(%x) {axes = array<i64: 1, 0>} : (tensor<4x5xf16>) -> tensor<4x5xf16>
  return %a, %b, %c : tensor<2x3xf16>, tensor<8x5xf16>, tensor<4x5xf16>
}
