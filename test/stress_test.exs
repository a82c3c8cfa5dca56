defmodule McpFramer.StressTest do
  # Many framers at once, and many processes fighting over one.
  use ExUnit.Case, async: false

  import McpFramer.Frames

  alias McpFramer.Chunks

  @moduletag timeout: 300_000

  test "1,000 processes each frame their own stream of 1,000 chunks at once, exactly" do
    parent = self()

    workers =
      for id <- 1..1_000 do
        spawn_monitor(fn ->
          :rand.seed(:exsss, {id, 1, 2})
          messages = for n <- 1..300, do: ~s({"id":#{id},"n":#{n},"pad":"#{pad()}"})
          stream = Enum.map_join(messages, &(&1 <> ending()))
          chunks = cut(stream, 1_000)
          send(parent, {:ready, self()})
          receive do: (:go -> :ok)

          framed = frame(McpFramer.new(max_message_bytes: 512), chunks)
          send(parent, {:framed, self(), framed == messages, length(chunks)})
        end)
      end

    for {pid, _} <- workers, do: assert_receive({:ready, ^pid}, 60_000)
    for {pid, _} <- workers, do: send(pid, :go)

    for {pid, ref} <- workers do
      assert_receive {:framed, ^pid, exact?, 1_000}, 120_000
      assert exact?, "process #{inspect(pid)} framed its stream wrongly"
      assert_receive {:DOWN, ^ref, :process, ^pid, :normal}
    end
  end

  test "8 processes racing on one framer with 32 MiB chunks: one wins exactly, the rest find it stale" do
    message = ~s({"jsonrpc":"2.0","id":1,"result":{}})
    count = div(32 * 1024 * 1024, byte_size(message) + 1)
    chunk = :binary.copy(message <> "\n", count)
    {:ok, [], framer} = McpFramer.feed(McpFramer.new(), "{\"held\":")
    parent = self()

    racers =
      for _ <- 1..8 do
        spawn_monitor(fn ->
          receive do: (:go -> :ok)

          result =
            try do
              {:won, McpFramer.feed(framer, chunk)}
            rescue
              error in ArgumentError -> {:lost, error.message}
            end

          send(parent, {self(), result})
        end)
      end

    for {pid, _} <- racers, do: send(pid, :go)

    results =
      for {pid, ref} <- racers do
        assert_receive {^pid, result}, 60_000
        assert_receive {:DOWN, ^ref, :process, ^pid, :normal}
        result
      end

    assert [{:won, {:ok, messages, winner}}] = for({:won, _} = won <- results, do: won)
    assert [first | rest] = messages
    assert first == "{\"held\":" <> message
    assert length(rest) == count - 1 and Enum.all?(rest, &(&1 == message))

    for {:lost, reason} <- results do
      assert reason =~ ~r/stale McpFramer/
    end

    assert {:ok, ["after"], _} = McpFramer.feed(winner, "after\n")
  end

  test "processes poking a stale copy never make the owner's feed fail or lose messages" do
    chunk = :binary.copy("{}\n", 1_000_000)
    {:ok, [], framer} = McpFramer.feed(McpFramer.new(), "")
    stale = framer
    {:ok, [], framer} = McpFramer.feed(framer, "")

    pokers =
      for _ <- 1..2 do
        spawn_link(fn -> poke(stale) end)
      end

    result = McpFramer.feed(framer, chunk)
    Enum.each(pokers, &Process.unlink/1)
    Enum.each(pokers, &Process.exit(&1, :kill))

    assert {:ok, messages, _} = result
    assert length(messages) == 1_000_000
  end

  # Asks a stale framer forever: each call takes the lock for a moment and
  # is refused.
  defp poke(stale) do
    try do
      McpFramer.buffered_bytes(stale)
    rescue
      ArgumentError -> :ok
    end

    poke(stale)
  end

  defp pad, do: :binary.copy("a", :rand.uniform(200))
  defp ending, do: Enum.random(["\n", "\r\n", "\n\n"])

  # Exactly `n` chunks, cut at random points (some may be empty).
  defp cut(stream, n) do
    Chunks.at(stream, for(_ <- 2..n, do: :rand.uniform(byte_size(stream) + 1) - 1))
  end
end
