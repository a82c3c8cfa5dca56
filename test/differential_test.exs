defmodule McpFramer.DifferentialTest do
  # McpFramer against the pure-Elixir baseline on random streams cut at
  # random points: after every feed both must return the same tag, the same
  # messages and the same buffered_bytes. Seeded; reproduce a failure with
  # the FRAMER_SEED it prints.
  use ExUnit.Case, async: true

  alias McpFramer.{Chunks, PureFramer, Seed}

  @cases 10_000

  test "McpFramer and the baseline agree on every feed of #{@cases} random streams" do
    run_cases(@cases, 0, fn ->
      cap = cap()
      {cap, cut(stream(cap))}
    end)
  end

  # Large messages exercise every way of holding bytes, mixed in one
  # message: short pieces gathered into a buffer that grows and freezes,
  # and chunk references for pieces of 1 KiB and more.
  test "McpFramer and the baseline agree on 300 random streams of large messages" do
    run_cases(300, 1, fn ->
      cap = :rand.uniform(256 * 1024)
      pieces = for _ <- 1..:rand.uniform(6), do: large_piece(cap)
      {cap, cut_large(IO.iodata_to_binary(pieces))}
    end)
  end

  # A message of over 256 KiB made from held bytes is copied into place a
  # slice per call: the chunk that completes it stops at its first newline
  # and is fed again until the copy is done.
  test "a message copied over several calls agrees with the baseline, and what follows it" do
    pieces = for n <- 1..80, do: :binary.copy(<<?a + rem(n, 26)>>, 65_536)
    assert IO.iodata_length(pieces) > 4 * 1024 * 1024

    chunks = pieces ++ ["end\r\nnext\npartial"]
    compare(McpFramer.new(), PureFramer.new(), chunks, "80 chunks of 64 KiB, then a short one")
  end

  # The copy goes 32 KiB at a time and stops once the call has run 300 µs,
  # as it often does on fresh memory: wherever it stops, in a gathered
  # piece or a referenced one, the next call goes on from there.
  # (copy_pieces in the core crate is tested for every stop.)
  test "messages of 1-3 MiB copied in steps over pieces of every size agree with the baseline" do
    run_cases(4, 2, fn ->
      lines =
        for _ <- 1..3 do
          bytes = :rand.bytes(1024 * 1024 + :rand.uniform(2 * 1024 * 1024))
          [:binary.replace(bytes, "\n", "n", [:global]), "\n"]
        end

      {8 * 1024 * 1024, cut_large(IO.iodata_to_binary(lines))}
    end)
  end

  # Case n of a run is drawn from its own seed, so a failure names the
  # FRAMER_SEED that reproduces it.
  defp run_cases(count, run, draw) do
    seed = Seed.seed("FRAMER_SEED")

    for n <- 1..count do
      reproduce = Seed.case!("FRAMER_SEED", seed, n, run)
      {cap, chunks} = draw.()
      where = "#{reproduce}, cap #{cap}, chunks #{inspect(chunks, limit: 50)}"

      compare(
        McpFramer.new(max_message_bytes: cap),
        PureFramer.new(max_message_bytes: cap),
        chunks,
        where
      )
    end
  end

  defp large_piece(cap) do
    case :rand.uniform(4) do
      1 -> :binary.copy("L", max(cap + :rand.uniform(5) - 3, 0)) <> "\r\n"
      2 -> :binary.copy("M", :rand.uniform(2 * cap)) <> "\n"
      3 -> :rand.bytes(:rand.uniform(64))
      4 -> "\n"
    end
  end

  # Chunks of 1 byte to 80 KiB, so pieces fall on both sides of 16 KiB.
  defp cut_large(stream) do
    Chunks.cut(stream, fn _ ->
      Enum.random([1, 100, 4096, 20_000, 65_536, 81_920]) |> :rand.uniform()
    end)
  end

  defp compare(_nif, _pure, [], _where), do: :ok

  defp compare(nif, pure, [chunk | chunks], where) do
    {nif_tag, nif_messages, nif} = split(McpFramer.feed(nif, chunk))
    {pure_tag, pure_messages, pure} = split(PureFramer.feed(pure, chunk))

    assert {nif_tag, nif_messages, McpFramer.buffered_bytes(nif)} ==
             {pure_tag, pure_messages, PureFramer.buffered_bytes(pure)},
           "differs at chunk #{inspect(chunk)}; reproduce with #{where}"

    compare(nif, pure, chunks, where)
  end

  defp split({:ok, messages, framer}), do: {:ok, messages, framer}
  defp split({:error, :message_too_large, messages, framer}), do: {:error, messages, framer}

  # Mostly small caps, so lines near and over the cap are common.
  defp cap do
    case :rand.uniform(3) do
      1 -> :rand.uniform(8)
      2 -> :rand.uniform(64)
      3 -> :rand.uniform(1024)
    end
  end

  defp stream(cap) do
    pieces = for _ <- 1..:rand.uniform(24), do: piece(cap)
    IO.iodata_to_binary(pieces)
  end

  defp piece(cap) do
    case :rand.uniform(9) do
      1 -> "\n"
      2 -> "\r\n"
      3 -> "\r"
      4 -> :binary.copy("\n", :rand.uniform(3))
      5 -> :binary.copy("x", max(cap + :rand.uniform(5) - 3, 0))
      6 -> :binary.copy("y", :rand.uniform(3 * cap))
      7 -> :rand.bytes(:rand.uniform(32))
      8 -> ~s({"jsonrpc":"2.0","id":#{:rand.uniform(99)}}\n)
      9 -> "a\r\r"
    end
  end

  # Cuts at random points: single bytes, small pieces, large pieces, and
  # sometimes an empty chunk; an empty stream is one empty chunk.
  defp cut(<<>>), do: [<<>>]

  defp cut(stream) do
    Chunks.cut(stream, fn _ ->
      case :rand.uniform(4) do
        1 -> 1
        2 -> :rand.uniform(8)
        3 -> :rand.uniform(256)
        4 -> 0
      end
    end)
  end
end
