// RUN: %nn2tosa opt %s --passes=lower-to-tosa,cse,dce | %FileCheck %s

// x[1:7:3] along axis 1 visits 1 and 4: slice 1..4, pad to count*stride = 6, view it as
// (count, stride), keep column 0.
// CHECK-LABEL: sym_name = "positive_stride"
// CHECK: "tosa.slice"{{.*}} -> tensor<2x4xf32>
// CHECK: "tosa.pad"{{.*}} -> tensor<2x6xf32>
// CHECK: "tosa.reshape"{{.*}} -> tensor<2x2x3x1xf32>
// CHECK: "tosa.slice"{{.*}} -> tensor<2x2x1x1xf32>
// CHECK: "tosa.reshape"{{.*}} -> tensor<2x2xf32>
func.func @positive_stride(%x: tensor<2x8xf32>) -> tensor<2x2xf32> {
  %a = "nn.strided_slice"(%x) {begin = array<i64: 0, 1>, end = array<i64: 2, 7>, strides = array<i64: 1, 3>} : (tensor<2x8xf32>) -> tensor<2x2xf32>
  return %a : tensor<2x2xf32>
}

// A negative stride reverses the axis first: x[::-2] of 5 elements visits 4, 2, 0.
// CHECK-LABEL: sym_name = "negative_stride"
// CHECK: "tosa.reverse"(%{{.*}}) <{axis = 0 : i32}>
// CHECK: "tosa.pad"
// CHECK: "tosa.reshape"{{.*}} -> tensor<1x3x2x1xi32>
// CHECK: "tosa.reshape"{{.*}} -> tensor<3xi32>
func.func @negative_stride(%x: tensor<5xi32>) -> tensor<3xi32> {
  %a = "nn.strided_slice"(%x) {begin = array<i64: 4>, end = array<i64: -6>, strides = array<i64: -2>} : (tensor<5xi32>) -> tensor<3xi32>
  return %a : tensor<3xi32>
}
