// RUN: %nn2tosa opt %s --passes=lower-to-tosa,cse,dce | %FileCheck %s

// sqrt = reciprocal(rsqrt(x)): exact at 0 and inf.
// CHECK-LABEL: sym_name = "sqrt"
// CHECK: ^bb0(%[[X:[^:]*]]:
// CHECK: %[[R:.*]] = "tosa.rsqrt"(%[[X]])
// CHECK: %[[S:.*]] = "tosa.reciprocal"(%[[R]])
// CHECK: "func.return"(%[[S]])
func.func @sqrt(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = "nn.sqrt"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %a : tensor<4xf32>
}

// f16 decompositions compute in f32 between casts; log2 = log(x) * (1/ln 2).
// CHECK-LABEL: sym_name = "log2_f16"
// CHECK: ^bb0(%[[X:[^:]*]]:
// CHECK: %[[W:.*]] = "tosa.cast"(%[[X]]) : (tensor<4xf16>) -> tensor<4xf32>
// CHECK: %[[L:.*]] = "tosa.log"(%[[W]])
// CHECK: %[[C:.*]] = "tosa.const"() <{values = dense<1.44269502> : tensor<1xf32>}>
// CHECK: %[[M:.*]] = "tosa.mul"(%[[L]], %[[C]], %{{.*}})
// CHECK: %[[N:.*]] = "tosa.cast"(%[[M]]) : (tensor<4xf32>) -> tensor<4xf16>
// CHECK: "func.return"(%[[N]])
func.func @log2_f16(%x: tensor<4xf16>) -> tensor<4xf16> {
  %a = "nn.log2"(%x) : (tensor<4xf16>) -> tensor<4xf16>
  return %a : tensor<4xf16>
}

// log10 = log(x) * (1/ln 10).
// CHECK-LABEL: sym_name = "log10"
// CHECK: "tosa.log"
// CHECK: dense<0.434294492>
func.func @log10(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = "nn.log10"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %a : tensor<4xf32>
}

// exp2 = e^y (1 + e), y + e = x ln 2 in double-f32 precision: no TOSA POW.
// CHECK-LABEL: sym_name = "exp2"
// CHECK: ^bb0(%[[X:[^:]*]]:
// CHECK-NOT: "tosa.pow"
// CHECK: "tosa.clamp"(%[[X]]) <{max_val = 3.000000e+02 : f32, min_val = -3.000000e+02 : f32
// CHECK: "tosa.exp"
// CHECK-NOT: "tosa.pow"
func.func @exp2(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = "nn.exp2"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %a : tensor<4xf32>
}

// tan = sin / cos.
// CHECK-LABEL: sym_name = "tan"
// CHECK: ^bb0(%[[X:[^:]*]]:
// CHECK-DAG: "tosa.sin"(%[[X]])
// CHECK-DAG: "tosa.cos"(%[[X]])
// CHECK: "tosa.reciprocal"
func.func @tan(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = "nn.tan"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %a : tensor<4xf32>
}

// atan: range reduction at tan(pi/8) and tan(3pi/8), an odd polynomial, the sign of x restored.
// CHECK-LABEL: sym_name = "atan"
// CHECK: ^bb0(%[[X:[^:]*]]:
// CHECK: "tosa.abs"(%[[X]])
// CHECK-DAG: dense<0.414213568>
// CHECK-DAG: dense<2.41421366>
// CHECK-DAG: dense<-0.0609233715>
// CHECK-DAG: dense<1.57079637>
// CHECK-DAG: dense<0.785398185>
// CHECK: "tosa.negate"
func.func @atan(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = "nn.atan"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %a : tensor<4xf32>
}

// asin(x) = atan(x * rsqrt((1 - x)(1 + x))); acos(x) = 2 atan(sqrt(1 - x) * rsqrt(1 + x)).
// CHECK-LABEL: sym_name = "asin_acos"
// CHECK: "tosa.rsqrt"
// CHECK: dense<-0.0609233715>
// CHECK: dense<2.000000e+00>
func.func @asin_acos(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %a = "nn.asin"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %b = "nn.acos"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %a, %b : tensor<4xf32>, tensor<4xf32>
}

// sinh/cosh from e^(|x|/2) (finite wherever the result is); sinh below 1 through expm1.
// CHECK-LABEL: sym_name = "sinh_cosh"
// CHECK: "tosa.exp"
// CHECK: "tosa.log"
// CHECK: "tosa.select"
func.func @sinh_cosh(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %a = "nn.sinh"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %b = "nn.cosh"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %a, %b : tensor<4xf32>, tensor<4xf32>
}

// Inverse hyperbolics through log1p, switching to log|x| + ln 2 past 2^12.
// CHECK-LABEL: sym_name = "inverse_hyperbolic"
// CHECK-NOT: "nn.
// CHECK-DAG: dense<4.096000e+03>
// CHECK-DAG: dense<0.693147182>
// CHECK: "func.return"
func.func @inverse_hyperbolic(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %a = "nn.asinh"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %b = "nn.acosh"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %c = "nn.atanh"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %a, %b, %c : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// round half to even: (|x| + 2^23) - 2^23, sign restored, |x| >= 2^23 kept.
// CHECK-LABEL: sym_name = "round"
// CHECK: ^bb0(%[[X:[^:]*]]:
// CHECK: %[[A:.*]] = "tosa.abs"(%[[X]])
// CHECK: %[[M:.*]] = "tosa.const"() <{values = dense<0x4B000000> : tensor<1xf32>}>
// CHECK: %[[P:.*]] = "tosa.add"(%[[A]], %[[M]])
// CHECK: %[[R:.*]] = "tosa.sub"(%[[P]], %[[M]])
// CHECK: "tosa.greater_equal"(%[[A]], %[[M]])
func.func @round(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = "nn.round"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %a : tensor<4xf32>
}

// softplus = max(x, 0) + log1p(e^-|x|); hard_swish = x * (clamp(x + 3, 0, 6) * 1/6).
// CHECK-LABEL: sym_name = "softplus_hard_swish"
// CHECK: "tosa.maximum"
// CHECK: "tosa.exp"
// CHECK: "tosa.clamp"{{.*}}max_val = 6.000000e+00 : f32, min_val = 0.000000e+00 : f32
// CHECK: dense<0.166666672>
func.func @softplus_hard_swish(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %a = "nn.softplus"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %b = "nn.hard_swish"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %a, %b : tensor<4xf32>, tensor<4xf32>
}
