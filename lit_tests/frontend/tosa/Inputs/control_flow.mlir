// y = n * x when cond, else |x|: a while_loop inside the then branch of a cond_if; a variable counts calls.
module {
"tosa.variable"() <{sym_name = "calls", var_shape = dense<[1]> : tensor<1xindex>, type = f32,
                    initial_value = dense<[0.0]> : tensor<1xf32>}> : () -> ()
func.func @main(%c: tensor<i1> {tosa.tensor_name = "cond"}, %x: tensor<3xf32> {tosa.tensor_name = "x"},
                %n: tensor<i32> {tosa.tensor_name = "n"}) -> (tensor<3xf32> {tosa.tensor_name = "y"}) {
  %calls = "tosa.variable_read"() <{name = "calls"}> : () -> tensor<1xf32>
  %inc = "tosa.const"() <{values = dense<[1.0]> : tensor<1xf32>}> : () -> tensor<1xf32>
  %next = "tosa.add"(%calls, %inc) : (tensor<1xf32>, tensor<1xf32>) -> tensor<1xf32>
  "tosa.variable_write"(%next) <{name = "calls"}> : (tensor<1xf32>) -> ()
  %r = "tosa.cond_if"(%c, %x, %n) ({
  ^bb0(%a: tensor<3xf32>, %k: tensor<i32>):
    %zero = "tosa.const"() <{values = dense<0.0> : tensor<3xf32>}> : () -> tensor<3xf32>
    %w:3 = "tosa.while_loop"(%k, %a, %zero) ({
    ^bb0(%i: tensor<i32>, %v: tensor<3xf32>, %acc: tensor<3xf32>):
      %z = "tosa.const"() <{values = dense<0> : tensor<i32>}> : () -> tensor<i32>
      %g = "tosa.greater"(%i, %z) : (tensor<i32>, tensor<i32>) -> tensor<i1>
      "tosa.yield"(%g) : (tensor<i1>) -> ()
    }, {
    ^bb0(%i: tensor<i32>, %v: tensor<3xf32>, %acc: tensor<3xf32>):
      %one = "tosa.const"() <{values = dense<1> : tensor<i32>}> : () -> tensor<i32>
      %d = "tosa.sub"(%i, %one) : (tensor<i32>, tensor<i32>) -> tensor<i32>
      %s = "tosa.add"(%acc, %v) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
      "tosa.yield"(%d, %v, %s) : (tensor<i32>, tensor<3xf32>, tensor<3xf32>) -> ()
    }) : (tensor<i32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<i32>, tensor<3xf32>, tensor<3xf32>)
    "tosa.yield"(%w#2) : (tensor<3xf32>) -> ()
  }, {
  ^bb0(%a: tensor<3xf32>, %k: tensor<i32>):
    %m = "tosa.abs"(%a) : (tensor<3xf32>) -> tensor<3xf32>
    "tosa.yield"(%m) : (tensor<3xf32>) -> ()
  }) : (tensor<i1>, tensor<3xf32>, tensor<i32>) -> tensor<3xf32>
  return %r : tensor<3xf32>
}
}
