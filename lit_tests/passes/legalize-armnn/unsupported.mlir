// RUN: %not %nn2tosa opt %s --passes=legalize-armnn 2>&1 | %FileCheck %s
// RUN: %python -c "import subprocess, sys; r = subprocess.run([sys.executable, '-m', 'nn2tosa', 'opt', sys.argv[1], '--passes=legalize-armnn'], capture_output=True); print('exit', r.returncode, 'lines', r.stderr.count(b'\n'))" %s | %FileCheck %s --check-prefix=EXIT
// EXIT: exit 3 lines 1

// Every layer nn cannot express is reported, all in one error (exit 3), each with its name, index
// and reason; the supported layers around them do not stop the report.
// CHECK: nn2tosa: error: 3 unsupported constructs:
// CHECK-SAME: layer 1 'switch' (Switch): control flow: routes its input to one of two outputs by a run-time condition
// CHECK-SAME: layer 2 'custom' (StandIn): a placeholder for a layer Arm NN could not represent
// CHECK-SAME: layer 4 'lrn' (Normalization): LocalContrast normalization has no defined computation in Arm NN
// CHECK-NOT: Activation
func.func @main(%x: tensor<1x4x4x3xf32>, %pred: tensor<1xi1>) -> (tensor<1x4x4x3xf32>, tensor<1x4x4x3xf32>) {
  %s:2 = "armnn.Switch"(%x, %pred) : (tensor<1x4x4x3xf32>, tensor<1xi1>) -> (tensor<1x4x4x3xf32>, tensor<1x4x4x3xf32>) loc(#switch)
  %c = "armnn.StandIn"(%s#1) {numInputs = 1 : i64, numOutputs = 1 : i64} : (tensor<1x4x4x3xf32>) -> tensor<1x4x4x3xf32> loc(#custom)
  %r = "armnn.Activation"(%c) {a = 0.0 : f32, activationFunction = "ReLu", b = 0.0 : f32} : (tensor<1x4x4x3xf32>) -> tensor<1x4x4x3xf32> loc(#relu)
  %n = "armnn.Normalization"(%r) {alpha = 1.0 : f32, beta = 0.5 : f32, dataLayout = "NHWC", k = 1.0 : f32, normChannelType = "Across", normMethodType = "LocalContrast", normSize = 3 : i64} : (tensor<1x4x4x3xf32>) -> tensor<1x4x4x3xf32> loc(#lrn)
  return %n, %s#0 : tensor<1x4x4x3xf32>, tensor<1x4x4x3xf32>
}
#switch = loc("switch"("layer 1"))
#custom = loc("custom"("layer 2"))
#relu = loc("relu"("layer 3"))
#lrn = loc("lrn"("layer 4"))
