// RUN: %nn2tosa opt %s --passes=lower-to-tosa,cse,dce | %FileCheck %s

// float -> int is TOSA CAST (rounds half to even, saturates); to bool is x != 0; from bool to
// float is a select of 1 and 0; f16 <-> bf16 goes through f32; i64 is i32 at TOSA level.
// CHECK-LABEL: sym_name = "casts"
// CHECK: ^bb0(%[[F:[^:]*]]: tensor<4xf32>{{.*}}, %[[B:[^:]*]]: tensor<4xi1>{{.*}}, %[[H:[^:]*]]: tensor<4xf16>
// CHECK: "tosa.cast"(%[[F]]) : (tensor<4xf32>) -> tensor<4xi8>
// CHECK: %[[Z:.*]] = "tosa.equal"(%[[F]], %{{.*}})
// CHECK: "tosa.logical_not"(%[[Z]])
// CHECK: "tosa.select"(%[[B]], %{{.*}}, %{{.*}}) : (tensor<4xi1>, tensor<1xf32>, tensor<1xf32>) -> tensor<4xf32>
// CHECK: %[[W:.*]] = "tosa.cast"(%[[H]]) : (tensor<4xf16>) -> tensor<4xf32>
// CHECK: "tosa.cast"(%[[W]]) : (tensor<4xf32>) -> tensor<4xbf16>
// CHECK: "tosa.cast"(%[[F]]) : (tensor<4xf32>) -> tensor<4xi32>
func.func @casts(%f: tensor<4xf32>, %b: tensor<4xi1>, %h: tensor<4xf16>) -> (tensor<4xi8>, tensor<4xi1>, tensor<4xf32>, tensor<4xbf16>, tensor<4xi64>) {
  %a = "nn.cast"(%f) : (tensor<4xf32>) -> tensor<4xi8>
  %c = "nn.cast"(%f) : (tensor<4xf32>) -> tensor<4xi1>
  %d = "nn.cast"(%b) : (tensor<4xi1>) -> tensor<4xf32>
  %e = "nn.cast"(%h) : (tensor<4xf16>) -> tensor<4xbf16>
  %g = "nn.cast"(%f) : (tensor<4xf32>) -> tensor<4xi64>
  return %a, %c, %d, %e, %g : tensor<4xi8>, tensor<4xi1>, tensor<4xf32>, tensor<4xbf16>, tensor<4xi64>
}

// Unsigned: ui8 -> f32 zero-extends first; f32 -> ui8 clamps to [0, 255] and wraps into i8 bits.
// CHECK-LABEL: sym_name = "unsigned"
// CHECK: "tosa.cast"{{.*}} -> tensor<4xi32>
// CHECK: "tosa.bitwise_and"
// CHECK: "tosa.cast"{{.*}} : (tensor<4xi32>) -> tensor<4xf32>
// CHECK: "tosa.clamp"{{.*}}<{max_val = 2.550000e+02 : f32, min_val = 0.000000e+00 : f32
// CHECK: "tosa.cast"{{.*}} : (tensor<4xf32>) -> tensor<4xi32>
// CHECK: "tosa.cast"{{.*}} : (tensor<4xi32>) -> tensor<4xi8>
func.func @unsigned(%u: tensor<4xui8>, %f: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xui8>) {
  %a = "nn.cast"(%u) : (tensor<4xui8>) -> tensor<4xf32>
  %b = "nn.cast"(%f) : (tensor<4xf32>) -> tensor<4xui8>
  return %a, %b : tensor<4xf32>, tensor<4xui8>
}
