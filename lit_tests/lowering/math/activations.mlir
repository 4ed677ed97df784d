// RUN: %nn2tosa opt %s --passes=lower-to-tosa,cse,dce | %FileCheck %s

// relu on floats and i8 is TOSA CLAMP; on i16/i32 it is MAXIMUM in i32 (CLAMP has no i32 form,
// and its i16 form would need EXT-INT16).
// CHECK-LABEL: sym_name = "relu"
// CHECK: "tosa.clamp"(%{{.*}}) <{max_val = 0x7F800000 : f32, min_val = 0.000000e+00 : f32
// CHECK: "tosa.clamp"(%{{.*}}) <{max_val = 127 : i8, min_val = 0 : i8
// CHECK: "tosa.cast"{{.*}} -> tensor<4xi32>
// CHECK: "tosa.maximum"
// CHECK: "tosa.minimum"
// CHECK: "tosa.cast"{{.*}} -> tensor<4xi16>
func.func @relu(%f: tensor<4xf32>, %q: tensor<4xi8>, %h: tensor<4xi16>) -> (tensor<4xf32>, tensor<4xi8>, tensor<4xi16>) {
  %a = "nn.relu"(%f) : (tensor<4xf32>) -> tensor<4xf32>
  %b = "nn.relu"(%q) : (tensor<4xi8>) -> tensor<4xi8>
  %c = "nn.relu"(%h) : (tensor<4xi16>) -> tensor<4xi16>
  return %a, %b, %c : tensor<4xf32>, tensor<4xi8>, tensor<4xi16>
}

// clamp bounds: floats as given; integers rounded inward (ceil of min, floor of max).
// CHECK-LABEL: sym_name = "clamp"
// CHECK: "tosa.clamp"(%{{.*}}) <{max_val = 7.500000e-01 : f16, min_val = -2.500000e-01 : f16
// CHECK: "tosa.clamp"(%{{.*}}) <{max_val = 100 : i8, min_val = -20 : i8
func.func @clamp(%f: tensor<4xf16>, %q: tensor<4xi8>) -> (tensor<4xf16>, tensor<4xi8>) {
  %a = "nn.clamp"(%f) {min = -0.25 : f64, max = 0.75 : f64} : (tensor<4xf16>) -> tensor<4xf16>
  %b = "nn.clamp"(%q) {min = -20.5 : f64, max = 100.2 : f64} : (tensor<4xi8>) -> tensor<4xi8>
  return %a, %b : tensor<4xf16>, tensor<4xi8>
}

// leaky_relu / prelu: select(x >= 0, x, alpha * x); prelu's alpha broadcast to x's rank.
// CHECK-LABEL: sym_name = "leaky_prelu"
// CHECK: ^bb0(%[[X:[^:]*]]: tensor<2x3xf32>{{.*}}, %[[A:[^:]*]]: tensor<3xf32>
// CHECK: %[[K:.*]] = "tosa.greater_equal"(%[[X]], %{{.*}})
// CHECK: %[[S:.*]] = "tosa.mul"(%{{.*}}, %[[X]], %{{.*}})
// CHECK: "tosa.select"(%[[K]], %[[X]], %[[S]])
// CHECK: %[[A2:.*]] = "tosa.reshape"(%[[A]], %{{.*}}) : (tensor<3xf32>, !tosa.shape<2>) -> tensor<1x3xf32>
// CHECK: %[[P:.*]] = "tosa.mul"(%[[A2]], %[[X]], %{{.*}})
// CHECK: "tosa.select"(%[[K]], %[[X]], %[[P]])
func.func @leaky_prelu(%x: tensor<2x3xf32>, %alpha: tensor<3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  %a = "nn.leaky_relu"(%x) {alpha = 0.1 : f64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %b = "nn.prelu"(%x, %alpha) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return %a, %b : tensor<2x3xf32>, tensor<2x3xf32>
}

// elu through expm1 of min(x, 0); gelu: erf form and tanh form.
// CHECK-LABEL: sym_name = "elu_gelu"
// CHECK: "tosa.minimum"
// CHECK: "tosa.exp"
// CHECK: dense<1.300000e+00>
// CHECK: dense<0.707106769>
// CHECK: "tosa.erf"
// CHECK: dense<4.471500e-02>
// CHECK: dense<0.797884583>
// CHECK: "tosa.tanh"
func.func @elu_gelu(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %a = "nn.elu"(%x) {alpha = 1.3 : f64} : (tensor<4xf32>) -> tensor<4xf32>
  %b = "nn.gelu"(%x) {approximate = "none"} : (tensor<4xf32>) -> tensor<4xf32>
  %c = "nn.gelu"(%x) {approximate = "tanh"} : (tensor<4xf32>) -> tensor<4xf32>
  return %a, %b, %c : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}
