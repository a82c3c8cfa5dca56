defmodule McpFramerTest do
  use ExUnit.Case, async: true
  doctest McpFramer

  describe "huge caps" do
    test "a cap far beyond memory reserves only what messages need" do
      # 64 KiB chunks are referenced, 4 KiB chunks copied into a buffer.
      for cap <- [2 ** 50, 2 ** 64 - 1], size <- [64 * 1024, 4 * 1024] do
        chunk = :binary.copy("x", size)
        framer = McpFramer.new(max_message_bytes: cap)

        framer =
          Enum.reduce(1..div(2 * 1024 * 1024, size), framer, fn _, framer ->
            {:ok, [], framer} = McpFramer.feed(framer, chunk)
            framer
          end)

        assert {:ok, [message], _} = McpFramer.feed(framer, "\n")
        assert byte_size(message) == 2 * 1024 * 1024
      end
    end
  end

  describe "chunks not aligned to a byte in memory" do
    # A binary matched out of a bitstring at a bit offset is a binary, but
    # its bytes are not where a byte-aligned one's are; the framer keeps
    # long pieces of such chunks and must read them back intact.
    test "frame like their aligned copies, also after garbage collection" do
      pieces = for n <- 1..6, do: :binary.copy(<<?a + n>>, 3_000 * n)
      stream = IO.iodata_to_binary([Enum.intersperse(pieces, "x\n"), "\n"])
      chunks = for <<chunk::binary-size(5_000) <- stream>>, do: unaligned(chunk)
      rest = binary_part(stream, 5_000 * length(chunks), rem(byte_size(stream), 5_000))

      {framer, messages} =
        Enum.reduce(chunks, {McpFramer.new(), []}, fn chunk, {framer, acc} ->
          {:ok, messages, framer} = McpFramer.feed(framer, chunk)
          :erlang.garbage_collect()
          {framer, acc ++ messages}
        end)

      {:ok, last, _} = McpFramer.feed(framer, unaligned(rest))
      expected = stream |> String.split("\n", trim: true)
      assert messages ++ last == expected
    end
  end

  # The bytes as a binary that starts 3 bits into a larger one.
  defp unaligned(bytes) do
    <<_::3, chunk::binary>> = <<0::3, bytes::binary>>
    chunk
  end

  describe "long chunks" do
    # A call on a normal scheduler pauses after a number of messages and
    # the rest of the chunk is fed in further calls; the caller sees one
    # result, the same as the baseline's.
    test "a chunk framed in several calls returns all its messages in order" do
      numbered = for n <- 1..20_000, into: "", do: ~s({"id":#{n}}\n)
      oversize = :binary.copy("x", 200) <> "\n"

      for chunk <- [numbered, :binary.copy("{}\n", 21_845), numbered <> oversize <> numbered] do
        expected =
          McpFramer.PureFramer.feed(McpFramer.PureFramer.new(max_message_bytes: 100), chunk)

        result = McpFramer.feed(McpFramer.new(max_message_bytes: 100), chunk)
        assert without_framer(result) == without_framer(expected)
      end
    end

    test "a Port-sized chunk framed in three calls returns its messages in order" do
      # Up to 8,192 messages a call for a chunk of at most 64 KiB: 20,000
      # one-byte messages take three calls, whose lists are joined.
      messages = for n <- 1..20_000, do: <<33 + rem(n * n, 89)>>
      chunk = Enum.map_join(messages, &(&1 <> "\n"))
      assert {:ok, ^messages, _} = McpFramer.feed(McpFramer.new(), chunk)
    end

    # The tag and the messages: everything but the framer, the last element.
    defp without_framer(result), do: Tuple.delete_at(result, tuple_size(result) - 1)
  end

  describe "mutable state, pure semantics" do
    test "feeding a superseded framer raises a stale error" do
      old = McpFramer.new()
      {:ok, [], new} = McpFramer.feed(old, "a")
      assert_raise ArgumentError, ~r/stale McpFramer/, fn -> McpFramer.feed(old, "b\n") end
      assert {:ok, ["a"], _} = McpFramer.feed(new, "\n")
    end

    test "asking a superseded framer for buffered_bytes raises a stale error" do
      old = McpFramer.new()
      {:ok, [], new} = McpFramer.feed(old, "abc")
      assert_raise ArgumentError, ~r/stale McpFramer/, fn -> McpFramer.buffered_bytes(old) end
      assert McpFramer.buffered_bytes(new) == 3
    end

    test "framers of two new/1 calls, or before and after a feed, are not equal" do
      framer = McpFramer.new()
      assert McpFramer.new() != framer
      {:ok, [], fed} = McpFramer.feed(framer, "a")
      assert fed != framer
    end

    test "a framer handed to another process is fed there" do
      {:ok, [], framer} = McpFramer.feed(McpFramer.new(), "{\"id\":")
      parent = self()
      spawn(fn -> send(parent, McpFramer.feed(framer, "1}\n")) end)
      assert_receive {:ok, ["{\"id\":1}"], _}
    end
  end

  describe "inspect" do
    test "shows the buffered bytes and the cap, never the held bytes" do
      {:ok, [], framer} = McpFramer.feed(McpFramer.new(max_message_bytes: 100), "secret")
      assert inspect(framer) == "#McpFramer<buffered_bytes: 6, max_message_bytes: 100>"
    end

    test "marks a superseded framer as stale instead of raising" do
      old = McpFramer.new(max_message_bytes: 100)
      {:ok, [], _new} = McpFramer.feed(old, "x")
      assert inspect(old) == "#McpFramer<stale, max_message_bytes: 100>"
    end

    test "marks a framer whose generation was altered as altered, not stale" do
      framer = McpFramer.new(max_message_bytes: 100)

      for generation <- [1, -1, "0", nil] do
        assert inspect(%{framer | generation: generation}) ==
                 "#McpFramer<altered, max_message_bytes: 100>"
      end
    end

    test "shows the settings of the framer the value holds, whatever its other fields say" do
      # Another framer's resource at the same generation is that framer.
      other = McpFramer.new(max_message_bytes: 2, decode: :json)
      forged = %{McpFramer.new() | resource: other.resource}

      assert inspect(forged) ==
               "#McpFramer<buffered_bytes: 0, max_message_bytes: 2, decode: :json>"

      assert inspect(%{forged | resource: make_ref()}) == "#McpFramer<not a framer>"
    end
  end

  describe "stream/2" do
    test "frames any enumerable of chunks lazily" do
      chunks = Stream.map(["a\nb", "c\r\n", "\nd"], &send_and_return(&1, self()))
      stream = McpFramer.stream(chunks)
      refute_received {:pulled, _}
      assert Enum.take(stream, 1) == ["a"]
      assert_received {:pulled, "a\nb"}
      refute_received {:pulled, "c\r\n"}
    end

    test "frames a file read in fixed-size chunks" do
      path =
        Path.join(System.tmp_dir!(), "mcp_framer_stream_#{System.unique_integer([:positive])}")

      File.write!(path, "{\"id\":1}\r\n\n{\"id\":2}\npartial")
      on_exit(fn -> File.rm(path) end)

      frame = fn file -> file |> IO.binstream(3) |> McpFramer.stream() |> Enum.to_list() end
      assert File.open!(path, frame) == ["{\"id\":1}", "{\"id\":2}"]
    end

    test "on_oversize: :skip drops oversized lines" do
      assert McpFramer.stream(["ok\ntoo long\n", "yes\n"], max_message_bytes: 3) |> Enum.to_list() ==
               ["ok", "yes"]
    end

    test "on_oversize: :raise emits the chunk's messages, then raises" do
      stream =
        McpFramer.stream(["ok\ntoo long\nyes\n", "never\n"],
          max_message_bytes: 3,
          on_oversize: :raise
        )

      parent = self()

      assert_raise McpFramer.MessageTooLargeError,
                   ~r/longer than max_message_bytes \(3 bytes\)/,
                   fn ->
                     Enum.each(stream, &send(parent, {:message, &1}))
                   end

      assert_received {:message, "ok"}
      assert_received {:message, "yes"}
      refute_received {:message, "never"}
    end

    test "on_oversize: :raise raises when the next chunk comes, before its messages" do
      stream =
        McpFramer.stream(["ok\ntoo long\n", "yes\n"], max_message_bytes: 3, on_oversize: :raise)

      parent = self()

      assert_raise McpFramer.MessageTooLargeError, fn ->
        Enum.each(stream, &send(parent, {:message, &1}))
      end

      assert_received {:message, "ok"}
      refute_received {:message, "yes"}
    end

    test "MessageTooLargeError raised without its cap leaves the number out" do
      assert Exception.message(%McpFramer.MessageTooLargeError{}) ==
               "an MCP message was longer than max_message_bytes and was discarded"
    end

    test "on_oversize: :raise raises at the end when the last chunk was oversized" do
      stream = McpFramer.stream(["ok\ntoo long"], max_message_bytes: 3, on_oversize: :raise)
      assert_raise McpFramer.MessageTooLargeError, fn -> Enum.to_list(stream) end
    end
  end

  defp send_and_return(chunk, pid) do
    send(pid, {:pulled, chunk})
    chunk
  end
end
