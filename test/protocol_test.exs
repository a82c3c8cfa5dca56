defmodule McpFramer.ProtocolTest do
  # The replies of McpFramer.Native.feed/3, each with its effect on the
  # framer's generation, as the table in native/mcp_framer_nif/src/outcome.rs
  # and lib/mcp_framer.ex gives them. A reply that advances the generation
  # leaves the old one stale; one that stays leaves it current.
  use ExUnit.Case, async: true

  alias McpFramer.Native

  import McpFramer.Frames, only: [native_replies: 3]

  @mib 1024 * 1024

  defp resource(opts \\ []), do: McpFramer.new(opts).resource

  defp stale?(resource, generation) do
    Native.buffered_bytes(resource, generation)
    false
  rescue
    error in ArgumentError ->
      assert error.message =~ "stale McpFramer"
      true
  end

  defp advanced?(resource, from) do
    assert stale?(resource, from)
    refute stale?(resource, from + 1)
    true
  end

  defp stayed?(resource, at) do
    refute stale?(resource, at)
    true
  end

  test "a chunk framed whole is {:ok, items} and advances the generation" do
    resource = resource()
    assert Native.feed(resource, 0, "a\nb\n") == {:ok, ["a", "b"]}
    assert advanced?(resource, 0)
  end

  test "a chunk with a line over the cap is {:error, items} and advances the generation" do
    resource = resource(max_message_bytes: 2)
    assert Native.feed(resource, 0, "a\nlong\nb\n") == {:error, ["a", "b"]}
    assert advanced?(resource, 0)
  end

  test "a call that stops after a number of messages is {:continue, tag, items, consumed} and advances the generation" do
    resource = resource()
    chunk = :binary.copy("{}\n", 10_000)
    assert {:continue, :ok, items, consumed} = Native.feed(resource, 0, chunk)
    assert consumed == 3 * length(items) and consumed < byte_size(chunk)
    assert advanced?(resource, 0)

    # The rest is under a call's count, but a call also stops when its time
    # is spent, and on a busy machine one did (forky root, fresh-clone CI):
    # the rest may take more calls, each a {:continue, ...} of its own.
    rest = binary_part(chunk, consumed, byte_size(chunk) - consumed)
    {replies, _} = native_replies(resource, 1, rest)
    {continued, [last]} = Enum.split(replies, -1)
    assert {:ok, _} = last
    assert Enum.all?(continued, &match?({:continue, :ok, [_ | _], _}, &1))

    more =
      Enum.flat_map(replies, fn
        {:continue, :ok, items, _consumed} -> items
        {:ok, items} -> items
      end)

    assert length(items) + length(more) == 10_000
  end

  test "a large message copied over several calls is :copying, which advances the generation" do
    {resource, generation} = holding(3 * @mib)
    assert Native.feed(resource, generation, "\n") == :copying
    assert advanced?(resource, generation)
    {replies, _} = native_replies(resource, generation + 1, "\n")
    assert {:ok, [message]} = List.last(replies)
    assert byte_size(message) == 3 * @mib
  end

  test "a large message whose tail leaves its last copying call no room is still finished" do
    # The tail is copied by the call that copies the last held bytes, if
    # they leave it room; if not, the next call finds them all copied.
    {resource, generation} = holding(3 * @mib)
    tail = :binary.copy("t", 255 * 1024)
    replies = copying_replies(resource, generation, tail <> "\n", 1_000)
    assert {:ok, [message]} = List.last(replies)
    assert message == :binary.copy("h", 3 * @mib) <> tail
  end

  test "a chunk too large for a normal scheduler is :continue_dirty and advances the generation, so that the dirty call is its caller's alone" do
    framer = McpFramer.new()
    chunk = :binary.copy("x\n", 3 * @mib)
    assert Native.feed(framer.resource, 0, chunk) == :continue_dirty
    assert advanced?(framer.resource, 0)

    # Another process holding the same value, between the two calls.
    assert_raise ArgumentError, ~r/stale McpFramer/, fn -> McpFramer.feed(framer, "b\n") end

    assert {:ok, items} = Native.feed_dirty(framer.resource, 1, chunk)
    assert length(items) == 3 * @mib
  end

  test "a chunk of 4 MiB is framed on a normal scheduler, one of a byte more is :continue_dirty" do
    chunk = :binary.copy("x", 4 * @mib)
    assert Native.feed(resource(), 0, chunk) == {:continue, :ok, [], 262_144}
    assert Native.feed(resource(), 0, chunk <> "x") == :continue_dirty
  end

  test "a call on a normal scheduler searches 256 KiB of its chunk at most, and says where it stopped" do
    {:ok, [], framer} = McpFramer.feed(McpFramer.new(), "held")
    tail = :binary.copy("t", 2 * @mib) <> "\n"
    {replies, generation} = native_replies(framer.resource, framer.generation, tail)
    # 2 MiB in eight calls; then the 2 MiB held is copied over more.
    {searched, copied} = Enum.split_while(replies, &match?({:continue, _, _, _}, &1))
    assert searched == List.duplicate({:continue, :ok, [], 262_144}, 8)
    assert [{:ok, [message]} | copying] = Enum.reverse(copied)
    assert copying != [] and Enum.all?(copying, &(&1 == :copying))
    assert byte_size(message) == 4 + 2 * @mib
    assert stayed?(framer.resource, generation)
  end

  test "a call while another process holds the framer is :busy and changes nothing" do
    assert {resource, :busy, fed} = busy_reply(10)
    assert_receive {^fed, {:ok, [_decoded]}}, 60_000
    assert advanced?(resource, 0)
  end

  test "items left for a dirty scheduler come as {:decode_dirty, reply}, with reply's effect" do
    # Over the 1 MiB a normal scheduler decodes, in chunks under the 4 MiB
    # it frames; each call searches 256 KiB of the chunk.
    line = ~s(") <> :binary.copy("x", 3 * div(@mib, 2)) <> ~s(")
    placeholder = {:decode_dirty, line}

    resource = resource(decode: :json)
    {replies, generation} = native_replies(resource, 0, line <> "\n")
    assert List.last(replies) == {:decode_dirty, {:ok, [placeholder]}}
    assert stayed?(resource, generation)

    resource = resource(decode: :json, max_message_bytes: 2 * @mib)
    over = :binary.copy("o", 2 * @mib + 1)
    {replies, generation} = native_replies(resource, 0, line <> "\n" <> over)

    assert {:decode_dirty, {:continue, :ok, [^placeholder], _}} =
             Enum.find(replies, &match?({:decode_dirty, _}, &1))

    assert List.last(replies) == {:error, []}
    assert stayed?(resource, generation)

    resource = resource(decode: :json)
    chunk = line <> "\n" <> :binary.copy("{}\n", 10_000)
    {replies, generation} = native_replies(resource, 0, chunk)

    assert {:decode_dirty, {:continue, :ok, [^placeholder | _], _}} =
             Enum.find(replies, &match?({:decode_dirty, _}, &1))

    assert stayed?(resource, generation)
  end

  test "a message whose copy a normal scheduler began is finished whole by a dirty call" do
    # Bytes no other test holds, so that memory left by one cannot pass.
    held = Enum.map_join(["k", "l", "m"], &:binary.copy(&1, @mib))
    {:ok, [], framer} = McpFramer.feed(McpFramer.new(), held)
    {resource, generation} = {framer.resource, framer.generation}

    assert Native.feed(resource, generation, "\n") == :copying
    assert {:ok, [message]} = Native.feed_dirty(resource, generation + 1, "\n")
    assert message == held
    assert Native.buffered_bytes(resource, generation + 2) == 0
  end

  test "a second holder of a framer that is copying a large message finds it stale" do
    {resource, generation} = holding(3 * @mib)
    framer = %McpFramer{McpFramer.new() | resource: resource, generation: generation}

    assert Native.feed(resource, generation, "\n") == :copying

    assert_raise ArgumentError, ~r/stale McpFramer/, fn ->
      Native.feed(resource, generation, "second\n")
    end

    assert_raise ArgumentError, ~r/stale McpFramer/, fn ->
      McpFramer.feed(framer, "second\n")
    end

    {replies, _} = native_replies(resource, generation + 1, "\n")
    assert {:ok, [message]} = List.last(replies)
    assert message == :binary.copy("h", 3 * @mib)
  end

  # Native.feed/3's replies to `chunk`, fed again on each :copying, as
  # McpFramer.feed/2 does; at most `calls` of them.
  defp copying_replies(resource, generation, chunk, calls) do
    reply = Native.feed(resource, generation, chunk)

    cond do
      reply != :copying -> [reply]
      calls > 1 -> [reply | copying_replies(resource, generation + 1, chunk, calls - 1)]
      true -> flunk("still :copying after the last call allowed")
    end
  end

  # A framer holding `size` bytes of an unfinished line, and its generation.
  defp holding(size) do
    {:ok, [], framer} =
      Enum.reduce(1..div(size, @mib), {:ok, [], McpFramer.new()}, fn _, {:ok, [], framer} ->
        McpFramer.feed(framer, :binary.copy("h", @mib))
      end)

    assert McpFramer.buffered_bytes(framer) == size
    {framer.resource, framer.generation}
  end

  # A feed's reply while another process feeds the same framer a chunk on
  # a dirty scheduler, with the tag that process's result comes with;
  # tried again if that feed was over before this one could see it. The
  # chunk is a 48 MiB string of escapes, which the framer holds its lock
  # for some 60 ms to decode: a 64 MiB chunk framed alone held it for
  # 3 ms, which went unseen ten times in a row in one CI run (the checked
  # NIF's run of the suite, other tests beside it).
  defp busy_reply(tries) do
    resource = resource(decode: :json, max_message_bytes: 128 * @mib)
    chunk = ~s(") <> :binary.copy("\\u00e9", 8 * @mib) <> ~s("\n)
    {parent, fed} = {self(), make_ref()}
    spawn_link(fn -> send(parent, {fed, Native.feed_dirty(resource, 0, chunk)}) end)

    reply =
      try do
        if poll_busy(resource, fed), do: Native.feed(resource, 0, "")
      rescue
        ArgumentError -> nil
      end

    case reply do
      :busy ->
        {resource, :busy, fed}

      _ when tries > 1 ->
        assert_receive {^fed, _}, 60_000
        busy_reply(tries - 1)
    end
  end

  defp poll_busy(resource, fed) do
    receive do
      {^fed, _} = result ->
        send(self(), result)
        false
    after
      0 -> Native.buffered_bytes(resource, 0) == :busy or poll_busy(resource, fed)
    end
  end
end
