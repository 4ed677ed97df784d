// RUN: %nn2tosa opt %s --passes=lower-to-tosa,cse,dce | %FileCheck %s

// Integer remainders: x - intdiv(x, y) * y (fmod); mod adds y where the signs of r and y differ.
// CHECK-LABEL: sym_name = "fmod_i16"
// CHECK: "tosa.cast"{{.*}} -> tensor<3xi32>
// CHECK: %[[Q:.*]] = "tosa.intdiv"
// CHECK: %[[P:.*]] = "tosa.mul"(%[[Q]]
// CHECK: %[[R:.*]] = "tosa.sub"(%{{.*}}, %[[P]])
// CHECK: %[[N:.*]] = "tosa.cast"(%[[R]]) : (tensor<3xi32>) -> tensor<3xi16>
// CHECK: "func.return"(%[[N]])
func.func @fmod_i16(%x: tensor<3xi16>, %y: tensor<3xi16>) -> tensor<3xi16> {
  %a = "nn.fmod"(%x, %y) : (tensor<3xi16>, tensor<3xi16>) -> tensor<3xi16>
  return %a : tensor<3xi16>
}

// CHECK-LABEL: sym_name = "mod_i32"
// CHECK: "tosa.intdiv"
// CHECK: "tosa.logical_xor"
// CHECK: "tosa.add"
// CHECK: "tosa.select"
func.func @mod_i32(%x: tensor<3xi32>, %y: tensor<3xi32>) -> tensor<3xi32> {
  %a = "nn.mod"(%x, %y) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
  return %a : tensor<3xi32>
}

// Float remainders are exact: quotients past 2^22 are first reduced by 12-bit multiples of y, as
// many steps as the operand type's quotient range needs (f16: 2^40, 3 steps; each truncates once,
// and so do the first and the final exact step), and the special values give numpy's NaN / x / y.
// CHECK-LABEL: sym_name = "fmod_f16"
// CHECK: "tosa.cast"{{.*}} -> tensor<3xf32>
// CHECK-COUNT-5: "tosa.ceil"
// CHECK-NOT: "tosa.ceil"
// CHECK: %[[OUT:.*]] = "tosa.cast"{{.*}} -> tensor<3xf16>
// CHECK: "func.return"(%[[OUT]])
func.func @fmod_f16(%x: tensor<3xf16>, %y: tensor<3xf16>) -> tensor<3xf16> {
  %a = "nn.fmod"(%x, %y) : (tensor<3xf16>, tensor<3xf16>) -> tensor<3xf16>
  return %a : tensor<3xf16>
}

// A constant divisor bounds the quotient: f32 x % 0.5 needs quotients up to 2^129 (11 steps, one
// truncation each; mod's own steps floor).
// CHECK-LABEL: sym_name = "mod_by_constant"
// CHECK-COUNT-11: "tosa.ceil"
// CHECK-NOT: "tosa.ceil"
// CHECK: "func.return"
func.func @mod_by_constant(%x: tensor<3xf32>) -> tensor<3xf32> {
  %c = "nn.constant"() {value = dense<0.5> : tensor<1xf32>} : () -> tensor<1xf32>
  %a = "nn.mod"(%x, %c) : (tensor<3xf32>, tensor<1xf32>) -> tensor<3xf32>
  return %a : tensor<3xf32>
}
