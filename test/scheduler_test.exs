defmodule McpFramer.SchedulerTest do
  # A NIF on a normal scheduler must give its thread back quickly. Each case
  # watches for long_schedule events of 2 ms or more from the feeding
  # process. A noisy machine gets a few retries, except where a retry would
  # run on memory the first try already faulted in.
  use ExUnit.Case, async: false

  @moduletag timeout: 300_000
  @limit_ms 2
  @tries 3

  @mib 1024 * 1024

  defp long_schedules(fun) do
    parent = self()
    me = make_ref()

    {worker, monitor} =
      spawn_monitor(fn ->
        receive do: (:go -> :ok)
        fun.()
        send(parent, {me, :done})
      end)

    previous = :erlang.system_monitor(self(), [{:long_schedule, @limit_ms}])
    send(worker, :go)

    receive do
      {^me, :done} -> Process.demonitor(monitor, [:flush])
      {:DOWN, ^monitor, _, _, reason} -> flunk("the feeding process died: #{inspect(reason)}")
    after
      120_000 -> flunk("the feeding process did not finish")
    end

    restore(previous)
    collect(worker, [])
  end

  defp restore(:undefined), do: :erlang.system_monitor(:undefined)
  defp restore({pid, options}), do: :erlang.system_monitor(pid, options)

  defp collect(worker, events) do
    receive do
      {:monitor, ^worker, :long_schedule, info} -> collect(worker, [info | events])
      {:monitor, _other, :long_schedule, _info} -> collect(worker, events)
    after
      0 -> events
    end
  end

  defp assert_fair(fun) do
    events =
      Enum.reduce_while(1..@tries, nil, fn _, _ ->
        case long_schedules(fun) do
          [] -> {:halt, []}
          events -> {:cont, events}
        end
      end)

    assert events == [], "long_schedule events on every try: #{inspect(events)}"
  end

  defp feed_all(framer, chunks) do
    Enum.reduce(chunks, framer, fn chunk, framer -> elem(McpFramer.feed(framer, chunk), 2) end)
  end

  test "64 KiB of {} (21,845 messages) in one feed" do
    chunk = :binary.copy("{}\n", 21_845)
    assert_fair(fn -> McpFramer.feed(McpFramer.new(), chunk) end)
  end

  test "one 256 MiB chunk" do
    chunk = :binary.copy(:binary.copy("x", 1023) <> "\n", 256 * 1024)
    assert_fair(fn -> McpFramer.feed(McpFramer.new(), chunk) end)
  end

  test "a 64 MiB chunk of 200 B messages" do
    chunk = :binary.copy(:binary.copy("y", 199) <> "\n", div(64 * @mib, 200))
    assert_fair(fn -> McpFramer.feed(McpFramer.new(), chunk) end)
  end

  test "an 8 MiB message completing after 128 chunks" do
    piece = :binary.copy("z", 65_536)
    last = binary_part(piece, 0, 65_535) <> "\n"
    chunks = List.duplicate(piece, 127) ++ [last]

    assert_fair(fn ->
      {:ok, [message], _} =
        McpFramer.new(max_message_bytes: 8 * @mib)
        |> feed_all(Enum.drop(chunks, -1))
        |> McpFramer.feed(last)

      true = byte_size(message) == 8 * @mib - 1
    end)
  end

  # Every first copy into a new message binary page-faults, so a retry on
  # warm memory would hide a stall: this case runs once, on chunks that are
  # each a binary of their own, and completes one message after another.
  test "several 8 MiB messages in a row in one process, on fresh memory" do
    runs =
      for run <- 1..4 do
        pieces = for i <- 1..127, do: :binary.copy(<<?a + rem(run * 127 + i, 26)>>, 65_536)
        pieces ++ [:binary.copy("z", 65_535) <> "\n"]
      end

    events =
      long_schedules(fn ->
        Enum.reduce(runs, McpFramer.new(max_message_bytes: 8 * @mib), fn chunks, framer ->
          {messages, framer} = feed_collect(framer, chunks)
          [message] = messages
          true = byte_size(message) == 8 * @mib - 1
          framer
        end)
      end)

    assert events == [], "long_schedule events: #{inspect(events)}"
  end

  defp feed_collect(framer, chunks) do
    Enum.flat_map_reduce(chunks, framer, fn chunk, framer ->
      {:ok, messages, framer} = McpFramer.feed(framer, chunk)
      {messages, framer}
    end)
  end

  test "a 256 MiB oversize line in one chunk" do
    chunk = :binary.copy("o", 256 * @mib) <> "\n"

    assert_fair(fn ->
      {:error, :message_too_large, [], _} = McpFramer.feed(McpFramer.new(), chunk)
    end)
  end
end
