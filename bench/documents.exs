defmodule Bench.Documents do
  # Documents up to 1 MiB, the largest a normal scheduler tries, most of
  # which it cannot decode in time: each must go to a dirty scheduler
  # having thrown away no more than a few microseconds of work. Each is
  # decoded by McpFramer.JSON.decode/1 and by the dirty NIF straight away,
  # the least it could cost; and framed as a line cut as a Port reads it,
  # by a decoding framer and by a framing one whose messages go straight to
  # the dirty NIF. The two sides of a pair alternate, each run in a fresh
  # process making calls for about 2 ms, their results dropped; the table
  # shows each side's median time a call.

  alias Bench.DecodeTraffic, as: D
  alias Bench.Traffic, as: T
  alias McpFramer.Native

  # McpFramer.JSON's default options, as the NIF takes them.
  @options McpFramer.JSON.options!([], "Bench.Documents")
  @runs 31
  @kib 1024

  def documents({pool, noise}) do
    for {kind, make} <- [
          {"text with escapes", &D.text_result(pool, &1, &2)},
          {"tools/list", &D.tools_list(pool, &1, &2)},
          {"base64 blob", &D.blob_result(noise, &1, &2)}
        ],
        {size, id} <- Enum.with_index([300 * @kib, 600 * @kib, 1000 * @kib], 1) do
      document = IO.iodata_to_binary(make.(id, size))
      {"#{kind}, #{div(byte_size(document), @kib)} KiB", document}
    end
  end

  def main(only) do
    # BENCH_ONLY="documents" runs these alone.
    if "decode documents" =~ only do
      T.seed(300)
      print(documents({D.pool(), D.noise()}))
    end
  end

  defp print(documents) do
    IO.puts(
      "\nDocuments over a normal scheduler's time, against decoding them on a dirty " <>
        "scheduler from the start; median of #{@runs} alternating runs, " <>
        "ratio = dirty-from-start time / our time\n"
    )

    IO.puts(
      "| document | JSON.decode/1 µs | dirty from the start µs | ratio | " <>
        "framed, decode: :json µs | framed, then dirty µs | ratio |"
    )

    IO.puts("|---|---:|---:|---:|---:|---:|---:|")

    ratios =
      for {name, document} <- documents do
        chunks = T.chunks([document, ?\n], &T.pipe_size/0)

        {ours, dirty} =
          pair(fn -> {:ok, _} = McpFramer.JSON.decode(document) end, fn ->
            {:ok, _} = Native.decode_dirty(document, @options)
          end)

        {framed, framed_dirty} =
          pair(fn -> [{:ok, _}] = frame(McpFramer.new(decode: :json), chunks, & &1) end, fn ->
            [{:ok, _}] = frame(McpFramer.new(), chunks, &Native.decode_dirty(&1, @options))
          end)

        IO.puts(
          "| #{name} | #{round(ours)} | #{round(dirty)} | #{shown(dirty / ours)} | " <>
            "#{round(framed)} | #{round(framed_dirty)} | #{shown(framed_dirty / framed)} |"
        )

        [dirty / ours, framed_dirty / framed]
      end
      |> List.flatten()

    within = Enum.count(ratios, &within?/1)
    IO.puts("\n#{within} of #{length(ratios)} within 5% of dirty from the start, or faster")
  end

  defp within?(ratio), do: ratio >= 0.95

  defp shown(ratio), do: Bench.ratio(ratio) <> if(within?(ratio), do: "", else: " (over 5%)")

  defp frame(framer, chunks, then) do
    {items, _framer} =
      Enum.flat_map_reduce(chunks, framer, fn chunk, framer ->
        {:ok, items, framer} = McpFramer.feed(framer, chunk)
        {Enum.map(items, then), framer}
      end)

    items
  end

  # Median times in µs a call of `ours` and `theirs`, run in turn. Each
  # run makes calls for about 2 ms, so that short ones are timed over many.
  defp pair(ours, theirs) do
    {once, _} = :timer.tc(theirs)
    calls = max(1, div(2000, max(once, 1)))

    times =
      for _ <- 1..@runs, side <- [ours, theirs] do
        Task.async(fn -> elem(:timer.tc(fn -> repeat(side, calls) end), 0) end)
        |> Task.await(:infinity)
      end

    {median(Enum.take_every(times, 2)) / calls, median(Enum.drop_every(times, 2)) / calls}
  end

  defp repeat(_fun, 0), do: :ok

  defp repeat(fun, calls) do
    fun.()
    repeat(fun, calls - 1)
  end

  defp median(times), do: Enum.at(Enum.sort(times), div(length(times), 2))
end
