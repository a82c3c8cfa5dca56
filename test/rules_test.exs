defmodule McpFramer.RulesTest do
  # Every framing rule, one test each, run against McpFramer and against the
  # pure-Elixir baseline, which must agree with it.
  use ExUnit.Case, async: true

  for framer <- [McpFramer, McpFramer.PureFramer] do
    describe inspect(framer) do
      @framer framer

      test "a message ends at \\n" do
        assert {_, ["{\"a\":1}", "{}"], 0} = frame(@framer, ["{\"a\":", "1}\n{}\n"])
      end

      test "exactly one trailing \\r is stripped" do
        assert {_, ["a\r", "b"], 0} = frame(@framer, ["a\r\r\nb\r\n"])
      end

      test "a \\r held at a chunk's end is stripped when \\n opens the next chunk" do
        assert {_, ["ab", "cd\r"], 0} = frame(@framer, ["ab\r", "\ncd\r\r", "\n"])
      end

      test "a \\r elsewhere is data" do
        assert {_, ["\ra\rb", "c\rd"], 0} = frame(@framer, ["\ra\rb\n", "c\r", "d\n"])
      end

      test "blank lines are skipped" do
        assert {_, ["a"], 0} = frame(@framer, ["\n\r\n\na\n", "\r", "\n", "\n"])
      end

      test "a line of spaces is a message" do
        assert {_, ["   ", " "], 0} = frame(@framer, ["   \n \r\n"])
      end

      test "messages are binaries with their bytes untouched" do
        bytes = for byte <- 0..255, byte != ?\n, into: <<>>, do: <<byte>>
        invalid_utf8 = <<0xFF, 0xFE, "{not json">>

        assert {_, [^bytes, ^invalid_utf8], 0} =
                 frame(@framer, [bytes <> "\n" <> invalid_utf8, "\n"])
      end

      test "bytes after the last \\n are held and counted, a trailing \\r included" do
        assert {[:ok], ["a"], 3} = frame(@framer, ["a\nbc\r"])
        assert {[:ok, :ok], [], 4} = frame(@framer, ["bc\r", "d"])
      end

      test "a line of exactly the cap passes however the chunks split it" do
        stream = "abcd\r\nefgh\n"

        for cut <- 0..byte_size(stream), cut2 <- cut..byte_size(stream) do
          chunks = [
            binary_part(stream, 0, cut),
            binary_part(stream, cut, cut2 - cut),
            binary_part(stream, cut2, byte_size(stream) - cut2)
          ]

          assert {[:ok, :ok, :ok], ["abcd", "efgh"], 0} =
                   frame(@framer, chunks, max_message_bytes: 4)
        end
      end

      test "a held partial of cap + 1 bytes ending in \\r is not yet oversize" do
        assert {[:ok], [], 5} = frame(@framer, ["abcd\r"], max_message_bytes: 4)
        assert {[:ok, :ok], ["abcd"], 0} = frame(@framer, ["abcd\r", "\n"], max_message_bytes: 4)
      end

      test "oversize is detected as soon as it is certain, holding nothing more" do
        assert {[:ok], [], 4} = frame(@framer, ["abcd"], max_message_bytes: 4)
        assert {[:ok, :error], [], 0} = frame(@framer, ["abcd", "e"], max_message_bytes: 4)
        assert {[:ok, :error], [], 0} = frame(@framer, ["abcd\r", "e"], max_message_bytes: 4)
      end

      test "oversize is detected for a line wholly inside one chunk" do
        assert {[:error], ["a", "b"], 0} = frame(@framer, ["a\nabcde\nb\n"], max_message_bytes: 4)
      end

      test "every byte through the next \\n is discarded, then framing resumes" do
        chunks = ["toolong", "still\r", "gone\nok\n"]
        assert {[:error, :ok, :ok], ["ok"], 0} = frame(@framer, chunks, max_message_bytes: 3)
      end

      test "the error tuple keeps every message of the chunk, before and after, in order" do
        chunk = "a\nlong\nb\nlonger\nc\nlo"
        assert {[:error], ["a", "b", "c"], 2} = frame(@framer, [chunk], max_message_bytes: 2)
      end

      test "the framer returned with the error is ready for the next chunk" do
        assert {[:error, :ok], ["x", "next"], 0} =
                 frame(@framer, ["x\nlonger", "rest\nnext\n"], max_message_bytes: 4)
      end

      test "the default cap is 8 MiB" do
        line = :binary.copy("x", 8_388_608)
        assert {[:ok], [^line], 0} = frame(@framer, [line <> "\n"])
        assert {[:error], [], 0} = frame(@framer, [line <> "xx\n"])
      end

      test "a line one byte over the default cap is oversize" do
        line = :binary.copy("x", 8_388_609)
        assert {[:error], [], 0} = frame(@framer, [line <> "\n"])
      end
    end
  end

  defp frame(framer, chunks, opts \\ []) do
    {tags, messages, state} =
      Enum.reduce(chunks, {[], [], framer.new(opts)}, fn chunk, {tags, messages, state} ->
        case framer.feed(state, chunk) do
          {:ok, new, state} ->
            {[:ok | tags], messages ++ new, state}

          {:error, :message_too_large, new, state} ->
            {[:error | tags], messages ++ new, state}
        end
      end)

    {Enum.reverse(tags), messages, framer.buffered_bytes(state)}
  end
end
