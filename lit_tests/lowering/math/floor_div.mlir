// RUN: %nn2tosa opt %s --passes=lower-to-tosa,cse,dce | %FileCheck %s

// Float floor division: floor(x * 1/y), corrected by the sign of the exact remainder (a Dekker
// product), and the rounded quotient itself past 2^23.
// CHECK-LABEL: sym_name = "floor_div_f32"
// CHECK-NOT: "nn.
// CHECK: "tosa.reciprocal"
// CHECK: "tosa.floor"
// CHECK: "tosa.const"() <{values = dense<4.097000e+03> : tensor<1xf32>}>
// CHECK: "tosa.const"() <{values = dense<0x4B000000> : tensor<1xf32>}>
// CHECK: "tosa.select"
// CHECK: "func.return"
func.func @floor_div_f32(%x: tensor<5xf32>, %y: tensor<5xf32>) -> tensor<5xf32> {
  %a = "nn.floor_div"(%x, %y) : (tensor<5xf32>, tensor<5xf32>) -> tensor<5xf32>
  return %a : tensor<5xf32>
}

// Integers: INTDIV truncates; where the remainder and y differ in sign, q - 1.
// CHECK-LABEL: sym_name = "floor_div_i32"
// CHECK: %[[Q:.*]] = "tosa.intdiv"(%[[X:[^,]*]], %[[Y:[^)]*]])
// CHECK: %[[P:.*]] = "tosa.mul"(%[[Q]], %[[Y]], %{{.*}})
// CHECK: %[[R:.*]] = "tosa.sub"(%[[X]], %[[P]])
// CHECK: "tosa.logical_xor"
// CHECK: %[[QM1:.*]] = "tosa.sub"(%[[Q]], %{{.*}})
// CHECK: %[[OUT:.*]] = "tosa.select"(%{{.*}}, %[[QM1]], %[[Q]])
// CHECK: "func.return"(%[[OUT]])
func.func @floor_div_i32(%x: tensor<5xi32>, %y: tensor<5xi32>) -> tensor<5xi32> {
  %a = "nn.floor_div"(%x, %y) : (tensor<5xi32>, tensor<5xi32>) -> tensor<5xi32>
  return %a : tensor<5xi32>
}
