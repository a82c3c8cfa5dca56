[
  inputs: ["{mix,.formatter}.exs", "{lib,test,bench,examples}/**/*.{ex,exs}"]
]
