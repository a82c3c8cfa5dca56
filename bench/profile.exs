# make profile: where one side's time goes on one decoding row, sampled
# by `perf record -e cpu-clock` (this machine has no hardware counters).
#
#   make profile ROW="text" SIDE=mcp_framer   (or any side of the decoding
#   rows: jiffy, json, jason, simdjson, as this BEAM has them)
#
# It builds the first row whose name contains ROW, starts feeding it
# through SIDE over and over, each pass in a fresh process as make bench
# does, and only then attaches perf to this VM, for PROFILE_SECONDS (10):
# building the traffic is not sampled. bench/perf_split.awk then sorts the
# samples into what they were spent on.

defmodule Bench.Profile do
  alias Bench.Decoding

  def main do
    only = System.get_env("ROW", "one per chunk")
    side = String.to_atom(System.get_env("SIDE", "mcp_framer"))
    seconds = String.to_integer(System.get_env("PROFILE_SECONDS", "10"))
    instruction_set = Bench.instruction_set!()

    rows = Enum.with_index(Decoding.rows(), 101)

    {{name, _, _} = row, n} =
      Enum.find(rows, fn {{name, _, _}, _} -> name =~ only end) ||
        raise "no decoding row has #{inspect(only)} in its name; the rows: " <>
                Enum.map_join(rows, ", ", fn {{name, _, _}, _} -> inspect(name) end)

    ingest = Keyword.fetch!(Decoding.sides(), side)
    chunks = Decoding.chunks(row, n, Decoding.source())
    feeder = spawn_link(fn -> loop(ingest, chunks) end)

    {_, 0} =
      System.cmd("perf", [
        "record",
        "-q",
        "-e",
        "cpu-clock",
        "-F",
        "2000",
        "-o",
        "_build/perf.data",
        "-p",
        System.pid(),
        "--",
        "sleep",
        "#{seconds}"
      ])

    Process.unlink(feeder)
    Process.exit(feeder, :kill)
    IO.puts("profiled #{side} on #{name} for #{seconds} s; McpFramer's #{instruction_set}")
  end

  defp loop(ingest, chunks) do
    Decoding.run(ingest, chunks)
    loop(ingest, chunks)
  end
end

Bench.Profile.main()
