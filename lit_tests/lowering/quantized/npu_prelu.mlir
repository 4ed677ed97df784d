// prelu (x >= zp ? x : alpha x, both branches encoded in the output type): GREATER_EQUAL + SELECT
// without a preset and for ethos-u85; for ethos-u55 and ethos-u65, which Vela gives no SELECT or
// comparison, the same choice through the sign bit of x - zp: y = P - sign * (N - P), sign = -1 or 0.
// RUN: %nn2tosa opt %s --passes=lower-to-tosa,cse,dce | %FileCheck %s --check-prefix=SELECT
// RUN: %nn2tosa opt %s --target ethos-u85 --passes=lower-to-tosa,cse,dce | %FileCheck %s --check-prefix=SELECT
// RUN: %nn2tosa opt %s --target ethos-u55 --passes=lower-to-tosa,cse,dce | %FileCheck %s --check-prefix=SIGN
// RUN: %nn2tosa opt %s --target ethos-u65 --passes=lower-to-tosa,cse,dce | %FileCheck %s --check-prefix=SIGN

// SELECT: "tosa.greater_equal"
// SELECT: "tosa.select"

// SIGN-NOT: "tosa.select"
// SIGN-NOT: "tosa.greater_equal"
// SIGN-DAG: %[[K31:.*]] = "tosa.const"() <{values = dense<31> : tensor<1x1xi32>}>
// SIGN: %[[SIGN:.*]] = "tosa.arithmetic_right_shift"(%{{.*}}, %[[K31]]) <{round = false}> : (tensor<2x6xi32>, tensor<1x1xi32>) -> tensor<2x6xi32>
// SIGN: %[[P:.*]] = "tosa.rescale"({{.*}}) -> tensor<2x6xi32>
// SIGN: %[[N:.*]] = "tosa.rescale"({{.*}}) -> tensor<2x6xi32>
// SIGN: %[[D:.*]] = "tosa.sub"(%[[N]], %[[P]])
// SIGN: %[[M:.*]] = "tosa.mul"(%[[SIGN]], %[[D]], %{{.*}})
// SIGN: %[[Y:.*]] = "tosa.sub"(%[[P]], %[[M]])
// SIGN: %[[Z:.*]] = "tosa.rescale"(%[[Y]], {{.*}}) -> tensor<2x6xi8>
// SIGN: "func.return"(%[[Z]])
// SIGN-NOT: "tosa.select"
func.func @prelu(%x: tensor<2x6x!quant.uniform<i8:f32, 0.0157:3>>, %a: tensor<6x!quant.uniform<i8:f32, 0.0125:0>>) -> tensor<2x6x!quant.uniform<i8:f32, 0.0211:-7>> {
  %y = "nn.prelu"(%x, %a) : (tensor<2x6x!quant.uniform<i8:f32, 0.0157:3>>, tensor<6x!quant.uniform<i8:f32, 0.0125:0>>) -> tensor<2x6x!quant.uniform<i8:f32, 0.0211:-7>>
  return %y : tensor<2x6x!quant.uniform<i8:f32, 0.0211:-7>>
}
