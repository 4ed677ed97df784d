// RUN: %nn2tosa opt %s --passes=lower-to-tosa,cse,dce | %FileCheck %s

// TFLite's integer LSTM cell (nn.lstm_integer) in integer TOSA. Each gate: two int8 MATMULs (x and
// h against the transposed weights, zero points 0), the effective biases (b - zp_x rowsum W_x, and
// -zp_h rowsum W_h) added in i32, each part rescaled by TFLite's multiplier (DOUBLE_ROUND: gemmlowp's
// MultiplyByQuantizedMultiplier), the input part saturated to i16 first, the sum saturated to the Q3.12
// gate, then gemmlowp's int16 logistic or tanh as a 65536-entry GATHER. Here x has zero point -3 and
// h zero point 5; the weights are [[1, 2], [3, 4]] everywhere, so the bias folds in
// b + 3 * [3, 7] and -5 * [3, 7].
// CHECK-LABEL: sym_name = "tflite_cell"
// CHECK-NOT: f32
// CHECK: %[[W:.*]] = "tosa.const"() <{values = dense<{{\[\[\[}}1, 3], [2, 4]]]> : tensor<1x2x2xi8>}>
// CHECK: %[[ZERO:.*]] = "tosa.const"() <{values = dense<0> : tensor<1xi8>}>
// CHECK: %[[XW:.*]] = "tosa.matmul"(%{{.*}}, %[[W]], %[[ZERO]], %[[ZERO]]) : (tensor<1x1x2xi8>, tensor<1x2x2xi8>, tensor<1xi8>, tensor<1xi8>) -> tensor<1x1x2xi32>
// The input gate's bias [100, -100] plus 3 * rowsum, TFLite's multiplier of 0.02 * 0.05 * 4096 (exponent 3):
// CHECK: "tosa.const"() <{values = dense<{{\[\[}}109, -79]]> : tensor<1x2xi32>}>
// CHECK: "tosa.const"() <{values = dense<1099511680> : tensor<1xi32>}>
// CHECK: "tosa.const"() <{values = dense<28> : tensor<1xi8>}>
// CHECK: "tosa.rescale"({{.*}}) <{{.*}}> : (tensor<1x2xi32>, tensor<1xi32>, tensor<1xi8>, tensor<1xi32>, tensor<1xi32>) -> tensor<1x2xi32>
// The input part saturates to int16 (in i32), then the state part: -5 * rowsum, 0.03 * 0.0078125 * 4096
// (exponent 0):
// CHECK: "tosa.maximum"
// CHECK: "tosa.minimum"
// CHECK: "tosa.const"() <{values = dense<{{\[\[}}-15, -35]]> : tensor<1x2xi32>}>
// CHECK: "tosa.const"() <{values = dense<2061584256> : tensor<1xi32>}>
// CHECK: "tosa.const"() <{values = dense<31> : tensor<1xi8>}>
// CHECK: %[[GATE:.*]] = "tosa.cast"(%{{.*}}) : (tensor<1x2xi32>) -> tensor<1x2xi16>
// gemmlowp's logistic: a GATHER of all 65536 int16 inputs
// CHECK: %[[TABLE:.*]] = "tosa.const"() <{values = dense_resource<{{.*}}> : tensor<1x65536x1xi16>}>
// CHECK: "tosa.gather"(%[[TABLE]], %{{.*}}) : (tensor<1x65536x1xi16>, tensor<1x2xi32>) -> tensor<1x2x1xi16>
// The forget gate (the same table) and the cell gate (tanh); the output gate follows the cell update
// CHECK-COUNT-2: "tosa.gather"
// The cell update: f * c and i * g as i32 products, each rounding-divided by a power of two (15, and
// 30 - 11 = 19) with halves away from zero: x + 2**(n-1) + (x >> 31), then an arithmetic right shift.
// CHECK: %[[FC:.*]] = "tosa.mul"(%{{.*}}, %{{.*}}, %{{.*}}) : (tensor<1x2xi32>, tensor<1x2xi32>, tensor<1xi8>) -> tensor<1x2xi32>
// CHECK: %[[SIGN:.*]] = "tosa.arithmetic_right_shift"(%[[FC]], %{{.*}}) <{round = false}>
// CHECK: "tosa.const"() <{values = dense<16384> : tensor<1x1xi32>}>
// CHECK: %[[NUDGED:.*]] = "tosa.add"
// CHECK: "tosa.add"(%[[NUDGED]], %[[SIGN]])
// CHECK: "tosa.const"() <{values = dense<15> : tensor<1x1xi32>}>
// CHECK: "tosa.const"() <{values = dense<262144> : tensor<1x1xi32>}>
// CHECK: "tosa.const"() <{values = dense<19> : tensor<1x1xi32>}>
// The cell clip 1.5 is 3072 units of 2**-11:
// CHECK: %[[CELL:.*]] = "tosa.clamp"(%{{.*}}) <{max_val = 3072 : i16, min_val = -3072 : i16
// the output gate, then tanh of the Q4.11 cell state (another table):
// CHECK-COUNT-2: "tosa.gather"
// h' = o * tanh(c') rescaled to the hidden state (zero point 5) by MultiplyByQuantizedMultiplier:
// 2**-30 / 0.0078125 = 2**-23 is the multiplier 2**30 with shift 31 + 22 = 53.
// CHECK: "tosa.const"() <{values = dense<1073741824> : tensor<1xi32>}>
// CHECK: "tosa.const"() <{values = dense<53> : tensor<1xi8>}>
// CHECK: "tosa.const"() <{values = dense<5> : tensor<1xi8>}>
// CHECK: %[[HIDDEN:.*]] = "tosa.rescale"({{.*}}) <{input_unsigned = false, output_unsigned = false, per_channel = false, rounding_mode = #tosa.rounding_mode<DOUBLE_ROUND>, scale32 = true}>
// CHECK: "func.return"(%[[HIDDEN]], %[[CELL]]) : (tensor<1x2xi8>, tensor<1x2xi16>) -> ()
func.func @tflite_cell(%x: tensor<1x2x!quant.uniform<i8:f32, 0.05:-3>>, %h: tensor<1x2x!quant.uniform<i8:f32, 0.0078125:5>>,
                       %c: tensor<1x2x!quant.uniform<i16:f32, 4.8828125E-4>>)
    -> (tensor<1x2x!quant.uniform<i8:f32, 0.0078125:5>>, tensor<1x2x!quant.uniform<i16:f32, 4.8828125E-4>>) {
  %w = "nn.constant"() {value = dense<[[1, 2], [3, 4]]> : tensor<2x2xi8>} : () -> tensor<2x2x!quant.uniform<i8:f32, 0.02>>
  %r = "nn.constant"() {value = dense<[[1, 2], [3, 4]]> : tensor<2x2xi8>} : () -> tensor<2x2x!quant.uniform<i8:f32, 0.03>>
  %bi = "nn.constant"() {value = dense<[100, -100]> : tensor<2xi32>} : () -> tensor<2x!quant.uniform<i32:f32, 0.001>>
  %bf = "nn.constant"() {value = dense<[200, -200]> : tensor<2xi32>} : () -> tensor<2x!quant.uniform<i32:f32, 0.001>>
  %bc = "nn.constant"() {value = dense<[300, -300]> : tensor<2xi32>} : () -> tensor<2x!quant.uniform<i32:f32, 0.001>>
  %bo = "nn.constant"() {value = dense<[400, -400]> : tensor<2xi32>} : () -> tensor<2x!quant.uniform<i32:f32, 0.001>>
  %y:2 = "nn.lstm_integer"(%x, %h, %c, %w, %w, %w, %w, %r, %r, %r, %r, %bi, %bf, %bc, %bo) {cell_clip = 1.5 : f64, proj_clip = 0.0 : f64, gate_scales = array<f64: 2.44140625E-4, 2.44140625E-4, 2.44140625E-4, 2.44140625E-4>,
      hidden = array<f64: 0.0078125, 5.0>, params = ["inputToInputWeights", "inputToForgetWeights", "inputToCellWeights",
      "inputToOutputWeights", "recurrentToInputWeights", "recurrentToForgetWeights", "recurrentToCellWeights",
      "recurrentToOutputWeights", "inputGateBias", "forgetGateBias", "cellBias", "outputGateBias"]}
      : (tensor<1x2x!quant.uniform<i8:f32, 0.05:-3>>, tensor<1x2x!quant.uniform<i8:f32, 0.0078125:5>>,
         tensor<1x2x!quant.uniform<i16:f32, 4.8828125E-4>>, tensor<2x2x!quant.uniform<i8:f32, 0.02>>,
         tensor<2x2x!quant.uniform<i8:f32, 0.02>>, tensor<2x2x!quant.uniform<i8:f32, 0.02>>,
         tensor<2x2x!quant.uniform<i8:f32, 0.02>>, tensor<2x2x!quant.uniform<i8:f32, 0.03>>,
         tensor<2x2x!quant.uniform<i8:f32, 0.03>>, tensor<2x2x!quant.uniform<i8:f32, 0.03>>,
         tensor<2x2x!quant.uniform<i8:f32, 0.03>>, tensor<2x!quant.uniform<i32:f32, 0.001>>,
         tensor<2x!quant.uniform<i32:f32, 0.001>>, tensor<2x!quant.uniform<i32:f32, 0.001>>,
         tensor<2x!quant.uniform<i32:f32, 0.001>>)
      -> (tensor<1x2x!quant.uniform<i8:f32, 0.0078125:5>>, tensor<1x2x!quant.uniform<i16:f32, 4.8828125E-4>>)
  return %y#0, %y#1 : tensor<1x2x!quant.uniform<i8:f32, 0.0078125:5>>, tensor<1x2x!quant.uniform<i16:f32, 4.8828125E-4>>
}

// Android NN's QUANTIZED_16BIT_LSTM (nn.quantized_lstm): uint8 x and h carried as int8 (stored - 128,
// which is what the kernel subtracts), the weights' zero point 120 carried as -8 in each MATMUL, one
// MultiplyByQuantizedMultiplier of the whole sum per gate by the multiplier of 4096 * s_bias; the state
// products are gemmlowp's 16-bit SRDHM: TOSA MUL with shift 15, saturated to int16.
// CHECK-LABEL: sym_name = "android_cell"
// CHECK-NOT: f32
// CHECK: %[[WZP:.*]] = "tosa.const"() <{values = dense<-8> : tensor<1xi8>}>
// CHECK: "tosa.matmul"(%{{.*}}, %{{.*}}, %{{.*}}, %[[WZP]]) : (tensor<1x1x2xi8>, tensor<1x2x1xi8>, tensor<1xi8>, tensor<1xi8>) -> tensor<1x1x1xi32>
// CHECK: "tosa.matmul"(%{{.*}}, %{{.*}}, %{{.*}}, %[[WZP]]) : (tensor<1x1x1xi8>, tensor<1x1x1xi8>, tensor<1xi8>, tensor<1xi8>) -> tensor<1x1x1xi32>
// CHECK: "tosa.rescale"({{.*}}) <{{.*}}rounding_mode = #tosa.rounding_mode<DOUBLE_ROUND>{{.*}}> : (tensor<1x1xi32>, tensor<1xi32>, tensor<1xi8>, tensor<1xi32>, tensor<1xi32>) -> tensor<1x1xi32>
// CHECK: "tosa.gather"
// CHECK: %[[SHIFT15:.*]] = "tosa.const"() <{values = dense<15> : tensor<1xi8>}>
// CHECK: "tosa.mul"(%{{.*}}, %{{.*}}, %[[SHIFT15]])
// The output: RoundingDivideByPOT(o * tanh(c'), 8) saturated to int8 (uint8 128 + it):
// CHECK: "tosa.const"() <{values = dense<8> : tensor<1x1xi32>}>
// CHECK: "tosa.const"() <{values = dense<-128> : tensor<1x1xi32>}>
// CHECK: "tosa.const"() <{values = dense<127> : tensor<1x1xi32>}>
// CHECK: %[[OUT:.*]] = "tosa.cast"(%{{.*}}) : (tensor<1x1xi32>) -> tensor<1x1xi8>
// CHECK: %[[U8:.*]] = "tosa.rescale"(%[[OUT]], {{.*}}output_unsigned = true
// CHECK: "func.return"(%{{.*}}, %[[U8]]) : (tensor<1x1xi16>, tensor<1x1xi8>) -> ()
func.func @android_cell(%x: tensor<1x2x!quant.uniform<u8:f32, 0.0078125:128>>, %c: tensor<1x1x!quant.uniform<i16:f32, 4.8828125E-4>>,
                        %h: tensor<1x1x!quant.uniform<u8:f32, 0.0078125:128>>)
    -> (tensor<1x1x!quant.uniform<i16:f32, 4.8828125E-4>>, tensor<1x1x!quant.uniform<u8:f32, 0.0078125:128>>) {
  %w = "nn.constant"() {value = dense<[[100, 200]]> : tensor<1x2xui8>} : () -> tensor<1x2x!quant.uniform<u8:f32, 0.004:120>>
  %r = "nn.constant"() {value = dense<[[50]]> : tensor<1x1xui8>} : () -> tensor<1x1x!quant.uniform<u8:f32, 0.004:120>>
  %b = "nn.constant"() {value = dense<[1000]> : tensor<1xi32>} : () -> tensor<1x!quant.uniform<i32:f32, 3.125E-5>>
  %y:2 = "nn.quantized_lstm"(%x, %c, %h, %w, %w, %w, %w, %r, %r, %r, %r, %b, %b, %b, %b) {params = ["inputToInputWeights",
      "inputToForgetWeights", "inputToCellWeights", "inputToOutputWeights", "recurrentToInputWeights",
      "recurrentToForgetWeights", "recurrentToCellWeights", "recurrentToOutputWeights", "inputGateBias", "forgetGateBias",
      "cellBias", "outputGateBias"]}
      : (tensor<1x2x!quant.uniform<u8:f32, 0.0078125:128>>, tensor<1x1x!quant.uniform<i16:f32, 4.8828125E-4>>,
         tensor<1x1x!quant.uniform<u8:f32, 0.0078125:128>>, tensor<1x2x!quant.uniform<u8:f32, 0.004:120>>,
         tensor<1x2x!quant.uniform<u8:f32, 0.004:120>>, tensor<1x2x!quant.uniform<u8:f32, 0.004:120>>,
         tensor<1x2x!quant.uniform<u8:f32, 0.004:120>>, tensor<1x1x!quant.uniform<u8:f32, 0.004:120>>,
         tensor<1x1x!quant.uniform<u8:f32, 0.004:120>>, tensor<1x1x!quant.uniform<u8:f32, 0.004:120>>,
         tensor<1x1x!quant.uniform<u8:f32, 0.004:120>>, tensor<1x!quant.uniform<i32:f32, 3.125E-5>>,
         tensor<1x!quant.uniform<i32:f32, 3.125E-5>>, tensor<1x!quant.uniform<i32:f32, 3.125E-5>>,
         tensor<1x!quant.uniform<i32:f32, 3.125E-5>>)
      -> (tensor<1x1x!quant.uniform<i16:f32, 4.8828125E-4>>, tensor<1x1x!quant.uniform<u8:f32, 0.0078125:128>>)
  return %y#0, %y#1 : tensor<1x1x!quant.uniform<i16:f32, 4.8828125E-4>>, tensor<1x1x!quant.uniform<u8:f32, 0.0078125:128>>
}
