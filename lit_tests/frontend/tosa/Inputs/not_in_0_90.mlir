// TOSA 1.0 content the 0.90 generation cannot express: SIN, COS and nan_mode IGNORE.
module {
  func.func @main(%x: tensor<4xf32> {tosa.tensor_name = "x"})
      -> (tensor<4xf32> {tosa.tensor_name = "s"}, tensor<4xf32> {tosa.tensor_name = "c"}, tensor<4xf32> {tosa.tensor_name = "m"}) {
    %s = "tosa.sin"(%x) : (tensor<4xf32>) -> tensor<4xf32> loc("sine")
    %c = "tosa.cos"(%x) : (tensor<4xf32>) -> tensor<4xf32> loc("cosine")
    %m = "tosa.minimum"(%x, %s) <{nan_mode = #tosa.nan_mode<IGNORE>}> : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("min")
    return %s, %c, %m : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  }
}
