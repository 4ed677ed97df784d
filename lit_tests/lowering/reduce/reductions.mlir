// RUN: %nn2tosa opt %s --passes=lower-to-tosa,cse,dce | %FileCheck %s

// Several axes: one TOSA reduction per axis (in increasing order), then a reshape for keep_dims=false.
// CHECK-LABEL: sym_name = "sum_two_axes"
// CHECK: %[[A:.*]] = "tosa.reduce_sum"(%{{.*}}) <{axis = 0 : i32}> : (tensor<2x3x4xf32>) -> tensor<1x3x4xf32>
// CHECK: %[[B:.*]] = "tosa.reduce_sum"(%[[A]]) <{axis = 2 : i32}> : (tensor<1x3x4xf32>) -> tensor<1x3x1xf32>
// CHECK: "tosa.reshape"(%[[B]], %{{.*}}) : (tensor<1x3x1xf32>, !tosa.shape<1>) -> tensor<3xf32>
func.func @sum_two_axes(%x: tensor<2x3x4xf32>) -> tensor<3xf32> {
  %a = "nn.reduce_sum"(%x) {axes = array<i64: 2, 0>, keep_dims = false} : (tensor<2x3x4xf32>) -> tensor<3xf32>
  return %a : tensor<3xf32>
}

// f16 mean: accumulated in f32, times 1/count, cast back; keep_dims=true needs no reshape.
// CHECK-LABEL: sym_name = "mean_f16"
// CHECK: "tosa.cast"{{.*}} -> tensor<2x3x4xf32>
// CHECK: "tosa.reduce_sum"{{.*}} -> tensor<2x1x4xf32>
// CHECK: dense<0.333333343>
// CHECK: %[[OUT:.*]] = "tosa.cast"{{.*}} -> tensor<2x1x4xf16>
// CHECK-NEXT: "func.return"(%[[OUT]])
func.func @mean_f16(%x: tensor<2x3x4xf16>) -> tensor<2x1x4xf16> {
  %a = "nn.reduce_mean"(%x) {axes = array<i64: 1>, keep_dims = true} : (tensor<2x3x4xf16>) -> tensor<2x1x4xf16>
  return %a : tensor<2x1x4xf16>
}

// Integer mean: the i32 sum divided by the count with INTDIV (truncation, as the integer result of
// numpy's float mean).
// CHECK-LABEL: sym_name = "mean_i8"
// CHECK: "tosa.reduce_sum"{{.*}} -> tensor<1x4xi32>
// CHECK: "tosa.intdiv"
// CHECK: "tosa.cast"{{.*}} -> tensor<1x4xi8>
func.func @mean_i8(%x: tensor<3x4xi8>) -> tensor<4xi8> {
  %a = "nn.reduce_mean"(%x) {axes = array<i64: 0>, keep_dims = false} : (tensor<3x4xi8>) -> tensor<4xi8>
  return %a : tensor<4xi8>
}

// max/min/any/all map directly; booleans: max is any, min is all.
// CHECK-LABEL: sym_name = "direct"
// CHECK: "tosa.reduce_max"{{.*}} <{axis = 1 : i32, nan_mode = #tosa.nan_mode<PROPAGATE>}>
// CHECK: "tosa.reduce_min"
// CHECK: "tosa.reduce_any"
// CHECK: "tosa.reduce_all"
func.func @direct(%x: tensor<3x4xf32>, %p: tensor<3x4xi1>) -> (tensor<3xf32>, tensor<3xf32>, tensor<3xi1>, tensor<3xi1>) {
  %a = "nn.reduce_max"(%x) {axes = array<i64: 1>, keep_dims = false} : (tensor<3x4xf32>) -> tensor<3xf32>
  %b = "nn.reduce_min"(%x) {axes = array<i64: 1>, keep_dims = false} : (tensor<3x4xf32>) -> tensor<3xf32>
  %c = "nn.reduce_max"(%p) {axes = array<i64: 1>, keep_dims = false} : (tensor<3x4xi1>) -> tensor<3xi1>
  %d = "nn.reduce_all"(%p) {axes = array<i64: 1>, keep_dims = false} : (tensor<3x4xi1>) -> tensor<3xi1>
  return %a, %b, %c, %d : tensor<3xf32>, tensor<3xf32>, tensor<3xi1>, tensor<3xi1>
}

// Integer products: halves multiplied in i32 until one slice is left (REDUCE_PRODUCT is float only).
// CHECK-LABEL: sym_name = "prod_i32"
// CHECK-NOT: "tosa.reduce_product"
// CHECK: "tosa.mul"{{.*}} -> tensor<2x2xi32>
// CHECK: "tosa.concat"{{.*}} -> tensor<2x3xi32>
// CHECK: "tosa.mul"{{.*}} -> tensor<2x1xi32>
// CHECK: "tosa.mul"{{.*}} -> tensor<2x1xi32>
func.func @prod_i32(%x: tensor<2x5xi32>) -> tensor<2xi32> {
  %a = "nn.reduce_prod"(%x) {axes = array<i64: 1>, keep_dims = false} : (tensor<2x5xi32>) -> tensor<2xi32>
  return %a : tensor<2xi32>
}
