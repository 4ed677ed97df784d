from nn2tosa.cli import run

run()
