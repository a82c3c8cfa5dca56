defmodule Bench.Encoding do
  # The encoding rows: the terms of the MCP traffic the decoding rows read
  # (bench/decode_traffic.exs), as McpFramer.JSON.decode!/1 makes them,
  # every term distinct, encoded by McpFramer.JSON.encode!/1 and by the
  # encoders our users compare it with, where this BEAM has them: jiffy's
  # :jiffy.encode/1 (a C NIF, Debian's erlang-jiffy), Elixir's own
  # JSON.encode!/1 (Elixir 1.18+), and Jason.encode!/1 when Jason is on the
  # code path (it cannot be installed here; see bench/README.md for how to
  # add it). Rates are MB/s of output, the JSON text McpFramer writes;
  # jiffy's text is the same but for `nil`, which it writes as "nil".
  #
  # Each side encodes all of a row's terms in a fresh process, once to
  # warm up and once on the clock, dropping each result; the sides
  # alternate, best of @rounds runs each. The ratio is the side's time over
  # McpFramer.JSON.encode!/1's.
  #
  # The same terms laid out with `pretty: true`, by McpFramer and by the
  # baselines that lay out (Jason's Formatter; jiffy's [:pretty], whose
  # layout differs a little), go in a table of their own, in MB/s of
  # McpFramer's laid-out text; they have no goal.

  alias Bench.DecodeTraffic, as: D
  alias Bench.Traffic, as: T

  @rounds 5
  @kib 1024
  @mib 1024 * 1024

  # {name, goals, a function that makes the row's messages from the text
  # pool and random bytes}, as the decoding rows do. The goals are the
  # issue's: at least 6x Jason.encode!/1, 2x :jiffy.encode/1 and 3x
  # JSON.encode!/1, and text with escapes at 1000 MB/s or more.
  def rows do
    goals = [jason: 6.0, jiffy: 2.0, json: 3.0]

    [
      {"progress notifications, ~150 B", goals,
       fn {pool, _} -> D.stream(8 * @mib, &D.progress(pool, &1)) end},
      {"tools/list results, schema-heavy", goals,
       fn {pool, _} -> D.stream(16 * @mib, &D.tools_list(pool, &1)) end},
      {"text results with escapes, 1-30 KB", [{:mb_per_s, 1000} | goals],
       fn {pool, _} ->
         size = T.between(1 * @kib, 30 * @kib)
         D.stream(16 * @mib, &D.text_result(pool, &1, size.()))
       end},
      {"base64 blobs, 50-550 KB", goals,
       fn {_, noise} ->
         size = T.between(50 * @kib, 550 * @kib)
         D.stream(32 * @mib, &D.blob_result(noise, &1, size.()))
       end}
    ]
  end

  # {side, label, encode}: McpFramer's forms, the floor, then the baselines
  # this BEAM has, chosen when this file compiles.
  #
  # The floor is :erlang.term_to_binary/1: the BEAM's own C code walking
  # the same terms and writing each into one binary, with none of the NIF
  # interface's calls per term that any NIF encoder pays, and no escaping
  # or UTF-8 check. An encoder whose goal asks for less time than the
  # floor takes must walk terms faster than the VM serializes them.
  def sides do
    [
      {:mcp_framer, "McpFramer.JSON.encode!/1", &McpFramer.JSON.encode!/1},
      {:mcp_framer_iodata, "McpFramer.JSON.encode_to_iodata!/1",
       &McpFramer.JSON.encode_to_iodata!/1},
      {:floor, ":erlang.term_to_binary/1", &:erlang.term_to_binary/1},
      {:mcp_framer_pretty, "McpFramer.JSON.encode!(term, pretty: true)", &pretty/1},
      {:mcp_framer_strict, "McpFramer.JSON.encode!(term, maps: :strict)", &strict/1}
    ] ++ baselines() ++ pretty_baselines()
  end

  defp pretty(term), do: McpFramer.JSON.encode!(term, pretty: true)

  # Every key of these terms is a binary, so `maps: :strict` has no key
  # to check: what it costs over encode!/1 is reading the options.
  defp strict(term), do: McpFramer.JSON.encode!(term, maps: :strict)

  def baselines, do: jason() ++ jiffy() ++ json()

  if Code.ensure_loaded?(Jason) do
    defp jason do
      [
        {:jason, "Jason.encode!/1", &Jason.encode!/1},
        {:jason_iodata, "Jason.encode_to_iodata!/1", &Jason.encode_to_iodata!/1}
      ]
    end

    defp jason_pretty,
      do: [{:jason_pretty, "Jason.encode!(term, pretty: true)", &Jason.encode!(&1, pretty: true)}]
  else
    defp jason, do: []
    defp jason_pretty, do: []
  end

  if Code.ensure_loaded?(:jiffy) do
    defp jiffy, do: [{:jiffy, ":jiffy.encode/1", &:jiffy.encode/1}]

    defp jiffy_pretty,
      do: [{:jiffy_pretty, ":jiffy.encode(term, [:pretty])", &:jiffy.encode(&1, [:pretty])}]
  else
    defp jiffy, do: []
    defp jiffy_pretty, do: []
  end

  def pretty_baselines, do: jason_pretty() ++ jiffy_pretty()

  if Code.ensure_loaded?(JSON) do
    defp json, do: [{:json, "JSON.encode!/1", &JSON.encode!/1}]
  else
    defp json, do: []
  end

  # Row `n`'s terms, the same on every run: each message decoded as the
  # decoding rows' framers give it.
  def terms({_, _, make}, n, source) do
    T.seed(n)
    for [message | _ending] <- make.(source), do: McpFramer.JSON.decode!(message)
  end

  def run(encode, terms) do
    Task.async(fn ->
      Enum.each(terms, encode)
      {micros, :ok} = :timer.tc(fn -> Enum.each(terms, encode) end)
      max(micros, 1)
    end)
    |> Task.await(:infinity)
  end

  def measure({name, goals, _} = row, n, source) do
    terms = terms(row, n, source)
    bytes = Enum.reduce(terms, 0, &(byte_size(McpFramer.JSON.encode!(&1)) + &2))
    pretty_bytes = Enum.reduce(terms, 0, &(byte_size(pretty(&1)) + &2))

    best =
      Enum.reduce(1..@rounds, %{}, fn _, best ->
        Enum.reduce(sides(), best, fn {side, _, encode}, best ->
          micros = run(encode, terms)
          Map.update(best, side, micros, &min(&1, micros))
        end)
      end)

    Map.merge(kept(terms), %{
      name: name,
      goals: goals,
      bytes: bytes,
      pretty_bytes: pretty_bytes,
      terms: length(terms),
      best: best
    })
  end

  # What encode_to_iodata!/1's output refers to instead of copying: the
  # share of its bytes that are the terms' own binaries.
  defp kept(terms) do
    {referenced, total} =
      Enum.reduce(terms, {0, 0}, fn term, {referenced, total} ->
        parts = term |> McpFramer.JSON.encode_to_iodata!() |> List.wrap() |> List.flatten()
        strings = MapSet.new(strings(term))
        own = for part <- parts, MapSet.member?(strings, part), do: byte_size(part)
        {referenced + Enum.sum(own), total + IO.iodata_length(parts)}
      end)

    %{referenced: referenced / max(total, 1)}
  end

  defp strings(term) when is_binary(term) and byte_size(term) >= 1024, do: [term]
  defp strings(term) when is_map(term), do: Enum.flat_map(Map.values(term), &strings/1)
  defp strings(term) when is_list(term), do: Enum.flat_map(term, &strings/1)
  defp strings(_term), do: []

  # BENCH_ONLY="encode" runs every encoding row.
  def main(only) do
    rows =
      for {{name, _, _} = row, n} <- Enum.with_index(rows(), 101),
          "encode #{name}" =~ only,
          do: {n, row}

    if rows != [] do
      source = Bench.Decoding.source()
      results = for {n, row} <- rows, do: measure(row, n, source)
      print_ours(results)
      for {side, label, _} <- baselines(), do: print_baseline(results, side, label)
      print_floor(results)
      print_pretty(results)
      print_options(results)
      print_missing()
    end
  end

  defp mb_per_s(r, side), do: round(Bench.mb_per_s(r.bytes, r.best[side]))

  defp print_ours(results) do
    IO.puts(
      "\nEncoding: the terms of MCP traffic, every one distinct, best of #{@rounds} " <>
        "interleaved runs; MB/s of output\n"
    )

    IO.puts(
      "| traffic | terms | encode!/1 MB/s | terms/s | goal | encode_to_iodata!/1 MB/s | " <>
        "of which the terms' own binaries |"
    )

    IO.puts("|---|---:|---:|---:|---:|---:|---:|")

    for r <- results do
      goal = r.goals[:mb_per_s]
      below = if goal && mb_per_s(r, :mcp_framer) < goal, do: " (below goal)", else: ""

      IO.puts(
        "| #{r.name} | #{r.terms} | #{mb_per_s(r, :mcp_framer)}#{below} | " <>
          "#{round(r.terms * 1_000_000 / r.best.mcp_framer)} | " <>
          "#{if goal, do: "#{goal} MB/s", else: ""} | #{mb_per_s(r, :mcp_framer_iodata)} | " <>
          "#{round(r.referenced * 100)}% |"
      )
    end
  end

  defp print_options(results) do
    IO.puts(
      "\nWith an option: McpFramer.JSON.encode!(term, maps: :strict), which has no key " <>
        "to check in these terms (all binaries); ratio = its rate / encode!/1's\n"
    )

    IO.puts("| traffic | encode!/1 MB/s | encode!(term, maps: :strict) MB/s | ratio |")
    IO.puts("|---|---:|---:|---:|")

    for r <- results do
      IO.puts(
        "| #{r.name} | #{mb_per_s(r, :mcp_framer)} | #{mb_per_s(r, :mcp_framer_strict)} | " <>
          "#{Bench.ratio(r.best.mcp_framer / r.best.mcp_framer_strict)} |"
      )
    end
  end

  defp print_baseline(results, side, label) do
    IO.puts("\nAgainst #{label}; ratio = #{label} time / McpFramer.JSON.encode!/1 time\n")

    IO.puts("| traffic | McpFramer MB/s | #{label} MB/s | ratio | goal |")
    IO.puts("|---|---:|---:|---:|---:|")

    for r <- results do
      ratio = r.best[side] / r.best.mcp_framer
      # The goals are against each baseline's encode!/1.
      goal = r.goals[side]
      mark = if goal && ratio < goal, do: " (below goal)", else: ""

      IO.puts(
        "| #{r.name} | #{mb_per_s(r, :mcp_framer)} | #{mb_per_s(r, side)} | " <>
          "#{Bench.ratio(ratio)}#{mark} | #{if goal, do: Bench.goal(goal), else: ""} |"
      )
    end
  end

  # McpFramer's time over the floor's, and for each baseline here the time
  # its goal allows over the floor's: below 1.00x, meeting that goal means
  # encoding faster than term_to_binary/1 serializes the same terms.
  defp print_floor(results) do
    goals =
      for {side, label, _} <- baselines(), side in [:jason, :jiffy, :json], do: {side, label}

    IO.puts(
      "\nThe floor: :erlang.term_to_binary/1 of the same terms, MB/s of McpFramer's " <>
        "output; ratio = McpFramer time / floor time; a goal's time = the baseline's " <>
        "time / its goal, over the floor's\n"
    )

    IO.puts(
      "| traffic | McpFramer MB/s | floor MB/s | ratio |" <>
        Enum.map_join(goals, fn {_, label} -> " #{label} goal's time |" end)
    )

    IO.puts("|---|---:|---:|---:|" <> String.duplicate("---:|", length(goals)))

    for r <- results do
      allowed =
        Enum.map_join(goals, fn {side, _} ->
          " #{Bench.ratio(r.best[side] / r.goals[side] / r.best.floor)} |"
        end)

      IO.puts(
        "| #{r.name} | #{mb_per_s(r, :mcp_framer)} | #{mb_per_s(r, :floor)} | " <>
          "#{Bench.ratio(r.best.mcp_framer / r.best.floor)} |" <> allowed
      )
    end
  end

  # The laid-out text: McpFramer's rate, what laying out adds to its
  # compact encode!/1's time, and each baseline's time over McpFramer's.
  defp print_pretty(results) do
    baselines = pretty_baselines()

    IO.puts(
      "\npretty: true, MB/s of McpFramer's laid-out text; ratio = the baseline's time / " <>
        "McpFramer's; over compact = McpFramer's time / its encode!/1 time\n"
    )

    IO.puts(
      "| traffic | McpFramer MB/s | over compact |" <>
        Enum.map_join(baselines, fn {_, label, _} -> " #{label} MB/s | ratio |" end)
    )

    IO.puts("|---|---:|---:|" <> String.duplicate("---:|---:|", length(baselines)))

    for r <- results do
      rate = fn side -> round(Bench.mb_per_s(r.pretty_bytes, r.best[side])) end
      ours = r.best.mcp_framer_pretty

      versus =
        Enum.map_join(baselines, fn {side, _, _} ->
          " #{rate.(side)} | #{Bench.ratio(r.best[side] / ours)} |"
        end)

      IO.puts(
        "| #{r.name} | #{rate.(:mcp_framer_pretty)} | " <>
          "#{Bench.ratio(ours / r.best.mcp_framer)} |" <> versus
      )
    end
  end

  defp print_missing do
    missing =
      for {side, label} <- [jason: "Jason", jiffy: "jiffy", json: "Elixir's JSON (1.18+)"],
          not List.keymember?(baselines(), side, 0),
          do: label

    if missing != [] do
      IO.puts("\nNot measured, not on this BEAM's code path: #{Enum.join(missing, ", ")}")
    end
  end
end
