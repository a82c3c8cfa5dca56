# Writes the messages of each decoding row of `make bench` to
# <dir>/<row>.jsonl, a message a line, for bench/compare_parser.rs; the
# rows whose name holds BENCH_ONLY, if it is set, as for `make compare`
# ("decode <name>"). The messages `make bench` decodes, drawn from the
# same seeds.
[dir] = System.argv()
only = System.get_env("BENCH_ONLY", "")
source = Bench.Decoding.source()

for {{name, _, _} = row, n} <- Enum.with_index(Bench.Decoding.rows(), 101),
    "decode #{name}" =~ only do
  text = row |> Bench.Decoding.chunks(n, source) |> IO.iodata_to_binary()
  slug = name |> String.replace(~r/[^A-Za-z0-9]+/, "-") |> String.trim("-")
  order = String.pad_leading(Integer.to_string(n - 100), 2, "0")
  File.write!(Path.join(dir, "#{order}-#{slug}.jsonl"), text)
end
