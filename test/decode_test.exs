defmodule McpFramer.DecodeTest do
  # One test per rule of decode: :json and McpFramer.JSON, named after it.
  # The decoding rules themselves are tested one by one in the core crate
  # (tests/json_rules.rs); these check that the BEAM terms are Jason's.
  use ExUnit.Case, async: true
  doctest McpFramer.JSON

  import McpFramer.Memory, only: [kept_alive: 1]

  alias McpFramer.{Chunks, DecodeError, JSON}

  @mib 1024 * 1024

  defp decode_framer(opts), do: McpFramer.new([decode: :json] ++ opts)

  describe "terms" do
    test "objects are maps with binary keys, arrays lists, literals atoms" do
      assert JSON.decode(~s({"a":[true,false,null],"b":{}})) ==
               {:ok, %{"a" => [true, false, nil], "b" => %{}}}
    end

    test "keys of one length, first and last byte are told apart at every byte" do
      # Such keys share a slot of the call's key table, which must compare
      # every byte of them; 22 bytes is the longest key it keeps.
      for length <- 1..24, at <- 0..(length - 1) do
        key = String.duplicate("k", length)
        other = binary_part(key, 0, at) <> "j" <> binary_part(key, at + 1, length - at - 1)
        json = ~s([{"#{key}":1},{"#{other}":2},{"#{key}":3}])
        assert JSON.decode(json) == {:ok, [%{key => 1}, %{other => 2}, %{key => 3}]}
      end
    end

    test "the first occurrence of a repeated key wins" do
      assert JSON.decode(~s({"a":1,"b":2,"a":3})) == {:ok, %{"a" => 1, "b" => 2}}
    end

    test "an object's pairs in any order make one map, the first of a repeated key winning" do
      # Keys that share their first bytes, with NUL bytes and lengths
      # around 8, in 200 orders: the BEAM sorts them, and a repeat makes
      # the map again a pair at a time.
      keys = ["", "a", "a\0", "ab", "abcdefg", "abcdefg\0", "abcdefgh", "abcdefgh2"]
      keys = keys ++ ["abcdefgh1", "b", "type", "properties", "required", "a"]
      :rand.seed(:exsss, {1, 2, 3})

      for _ <- 1..200 do
        pairs = keys |> Enum.shuffle() |> Enum.with_index()
        text = fn {k, v} -> ~s("#{String.replace(k, <<0>>, "\\u0000")}":#{v}) end
        json = "{" <> Enum.map_join(pairs, ",", text) <> "}"
        first = Enum.reduce(pairs, %{}, fn {k, v}, map -> Map.put_new(map, k, v) end)
        assert JSON.decode(json) == {:ok, first}
      end
    end

    test "the first occurrence wins in objects of over 32 pairs too" do
      # OTP 25 keeps a value silently for repeats in maps this large.
      for repeat <- [0, 20, 39] do
        pairs = for i <- 0..39, do: ~s("k#{i}":#{i})
        again = ~s("k#{repeat}":"again")
        object = "{" <> Enum.join(pairs ++ [again], ",") <> "}"
        {:ok, map} = JSON.decode(object)
        assert map_size(map) == 40
        assert map["k#{repeat}"] == repeat
      end
    end

    # 33 pairs, the fewest the BEAM hashes: OTP 25 keeps a value of a
    # repeated key silently. A map made so may even be == to the right one.
    test "the first occurrence wins in an object of 33 pairs" do
      pairs = for i <- 1..32, do: ~s("k#{i}":#{i})
      object = "{" <> Enum.join(pairs ++ [~s("k1":"again")], ",") <> "}"
      {:ok, map} = JSON.decode(object)
      assert map_size(map) == 32
      assert map["k1"] == 1
    end

    test "integers beyond 64 bits are integers" do
      for text <- [
            "0",
            "-0",
            "9223372036854775807",
            "-9223372036854775809",
            "1" <> String.duplicate("0", 400)
          ] do
        assert JSON.decode(text) == {:ok, String.to_integer(text)}
      end
    end

    test "an integer of 1,024 characters is exact" do
      text = "-" <> String.duplicate("1234567890", 102) <> "123"
      assert JSON.decode(text) == {:ok, String.to_integer(text)}
      assert [{:ok, [value]}] = decode_lines(["[#{text}]"])
      assert value == String.to_integer(text)
    end

    test "a fraction or an exponent makes a float, as binary_to_float rounds it" do
      for text <- ["1E2", "-0.0", "0.1", "2.2250738585072014e-308", "1.7976931348623157e308"] do
        {:ok, float} = JSON.decode(text)
        assert is_float(float)
        assert float === :erlang.binary_to_float(normalize_float(text))
      end
    end

    test "strings are UTF-8 binaries with every escape decoded" do
      assert JSON.decode(~s("a\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\ud83d\\ude00\\u0000")) ==
               {:ok, "a\"\\/\b\f\n\r\té😀" <> <<0>>}
    end

    test "any value may stand at the top level, with whitespace around it" do
      assert JSON.decode(" \t\r\n\"x\" \n") == {:ok, "x"}
      assert JSON.decode("null") == {:ok, nil}
    end
  end

  describe "errors" do
    test "an error gives the position, the token and the document" do
      assert JSON.decode("[1e400]") ==
               {:error, %DecodeError{position: 1, token: "1e400", data: "[1e400]"}}

      assert JSON.decode(~s({"a" 1})) ==
               {:error, %DecodeError{position: 5, token: nil, data: ~s({"a" 1})}}
    end

    test "an unexpected end is reported at the document's length" do
      assert {:error, %DecodeError{position: 4, token: nil}} = JSON.decode(~s([1, ))
      assert {:error, %DecodeError{position: 0}} = JSON.decode("")
    end

    test "invalid UTF-8, control bytes and lone surrogates are errors" do
      for text <- [<<?", 0xFF, ?">>, <<?", 1, ?">>, ~s("\\ud800"), ~s("\\udc00x")] do
        assert {:error, %DecodeError{}} = JSON.decode(text)
      end
    end

    test "a million open brackets give an error, not a crash" do
      text = :binary.copy("[", 1_000_000)
      assert {:error, %DecodeError{position: 1_000_000}} = JSON.decode(text)
      assert [{:error, %DecodeError{position: 1_000_000}}] = decode_lines([text])
    end

    test "decode! raises the DecodeError" do
      assert_raise DecodeError, "unexpected end of input at position 1", fn ->
        JSON.decode!("[")
      end
    end

    test "the message is Jason's, naming the byte, the token or the end" do
      assert Exception.message(%DecodeError{position: 1, token: nil, data: "[x"}) ==
               ~s|unexpected byte at position 1: 0x78 ("x")|

      assert Exception.message(%DecodeError{position: 0, token: nil, data: <<1>>}) ==
               "unexpected byte at position 0: 0x1"

      assert Exception.message(%DecodeError{position: 0, token: "1e999", data: "1e999"}) ==
               ~s|unexpected sequence at position 0: "1e999"|

      assert Exception.message(%DecodeError{position: 2, token: nil, data: "[1"}) ==
               "unexpected end of input at position 2"
    end

    test "a position past the end, which Jason's message cannot show, is the end" do
      # Where a key function throws {:position, p} past the document.
      assert Exception.message(%DecodeError{position: 9, token: nil, data: "[1"}) ==
               "unexpected end of input at position 9"
    end
  end

  describe "arguments" do
    test "iodata is decoded like its binary" do
      assert JSON.decode([?[, ["1", ?,], "2]"]) == {:ok, [1, 2]}
    end

    test "anything but iodata, and bad options, raise ArgumentError" do
      assert_raise ArgumentError, ~r/binary or iodata/, fn -> JSON.decode(:atom) end
      assert_raise ArgumentError, ~r/binary or iodata/, fn -> JSON.decode([:atom]) end
      assert_raise ArgumentError, ~r/:strings/, fn -> JSON.decode("1", strings: :other) end
      assert_raise ArgumentError, ~r/:decode/, fn -> McpFramer.new(decode: :xml) end
      assert_raise ArgumentError, ~r/only with decode/, fn -> McpFramer.new(strings: :copy) end
    end

    test "options are a keyword list, and an unknown one raises naming it, where Jason ignores it" do
      assert_raise ArgumentError, ~r/option\(s\) \[:max_dept\]/, fn ->
        JSON.decode("[[1]]", max_dept: 1)
      end

      assert_raise ArgumentError, ~r/keyword list of options, got: %{keys: :atoms}/, fn ->
        JSON.decode(~s({"a":1}), %{keys: :atoms})
      end
    end
  end

  describe "a decoding framer" do
    test "gives what JSON.decode gives for each message, in order" do
      lines = [~s({"id":1}), "not json", ~s([1,2]), ~s("x"), "{", "  7 "]
      chunks = Chunks.cut(Enum.map_join(lines, "", &(&1 <> "\n")), 3)
      assert decode_lines_from(chunks) == Enum.map(lines, &JSON.decode/1)
    end

    test "a line that is not JSON costs only itself" do
      assert [{:ok, 1}, {:error, %DecodeError{data: "{oops"}}, {:ok, 2}] =
               decode_lines(["1", "{oops", "2"])
    end

    test "the framing rules are unchanged: CRLF, blank lines, oversize lines" do
      framer = decode_framer(max_message_bytes: 5)

      assert {:error, :message_too_large, [{:ok, 1}, {:ok, [2]}], framer} =
               McpFramer.feed(framer, "1\r\n\n[2]\n[1234567]\n")

      assert {:ok, [], framer} = McpFramer.feed(framer, "[3")
      assert McpFramer.buffered_bytes(framer) == 2
      assert {:ok, [{:ok, [3]}], _} = McpFramer.feed(framer, "]\n")
    end

    test "a message too long for a normal scheduler is left for a dirty one" do
      # The NIF's own reply: the long message is a placeholder, which
      # McpFramer.feed/2 decodes on a dirty scheduler. A call searches 256
      # KiB of the chunk, so the message completes in a later call.
      big = ~s({"blob":") <> :binary.copy("QUJD", div(3 * @mib, 4)) <> ~s("})
      resource = McpFramer.new(decode: :json).resource

      {replies, _} = McpFramer.Frames.native_replies(resource, 0, "1\n" <> big <> "\n2\n")
      assert [{:continue, :ok, [{:ok, 1}], _} | _] = replies
      assert {:decode_dirty, {:ok, [{:decode_dirty, ^big}, {:ok, 2}]}} = List.last(replies)
    end

    test "messages too long to decode inside a call's budget are decoded all the same" do
      big = ~s({"blob":") <> :binary.copy("QUJD", div(3 * @mib, 4)) <> ~s("})
      deep = :binary.copy("[", 200_000) <> :binary.copy("]", 200_000)
      escapes = ~s(") <> :binary.copy("\\n", 400_000) <> ~s(")
      lines = ["1", big, "2", deep, escapes, "3"]
      chunks = Chunks.port(Enum.map_join(lines, "", &(&1 <> "\n")))
      items = decode_lines_from(chunks)
      assert length(items) == length(lines)

      # Against the Jason oracle, not this decoder.
      for {item, line} <- Enum.zip(items, lines) do
        assert item == McpFramer.TestJSON.decode(line)
      end
    end

    test "a message decoded on a dirty scheduler takes the framer's own options, not a field of its value" do
      framer = McpFramer.new(decode: :json, keys: :atoms)
      # What an options field of the struct, were there one, would be
      # altered to: keys as strings. Through the process dictionary, as
      # Elixir's type check refuses a struct with a field it does not have.
      Process.put(
        :altered,
        Map.put(framer, :decode_options, {:reference, :strings, 0, 0, :first})
      )

      altered = Process.delete(:altered)
      big = ~s({"blob":") <> :binary.copy("QUJD", div(3 * @mib, 4)) <> ~s("})

      assert {:ok, [{:ok, %{blob: _}}, {:ok, %{small: 1}}], framer} =
               McpFramer.feed(altered, big <> "\n" <> ~s({"small":1}) <> "\n")

      assert McpFramer.buffered_bytes(framer) == 0
    end

    test "stream/2 takes decode: :json and emits the same items" do
      chunks = ["1\n[", "2]\nno\n"]

      assert [{:ok, 1}, {:ok, [2]}, {:error, %DecodeError{}}] =
               McpFramer.stream(chunks, decode: :json) |> Enum.to_list()
    end

    test "without the option, messages are binaries as before" do
      assert {:ok, ["[1]"], _} = McpFramer.feed(McpFramer.new(), "[1]\n")
    end
  end

  describe "what a decoded string keeps alive" do
    @long String.duplicate("s", 100)
    # A second message that makes the chunk far larger than the first.
    @pad :binary.copy(" ", 10_000) <> "0\n"

    test "a long string is a sub-binary of its message's chunk by default" do
      chunk = ~s(["#{@long}"]\n) <> @pad
      [{:ok, [string]}, {:ok, 0}] = decode_lines_from([chunk])
      assert string == @long
      assert kept_alive(string) == byte_size(chunk)
    end

    test "with strings: :copy, no string keeps more than itself" do
      chunk = ~s(["#{@long}", {"#{@long}": "short"}]\n) <> @pad
      [{:ok, [string, map]}, {:ok, 0}] = decode_lines_from([chunk], strings: :copy)
      [{key, _}] = Map.to_list(map)

      for binary <- [string, key] do
        assert kept_alive(binary) == byte_size(binary)
      end

      {:ok, [copied]} = JSON.decode(~s([" #{@long}"]), strings: :copy)
      assert kept_alive(copied) == byte_size(copied)
    end

    # Copies past 32 KiB are made a step at a time, each step only if the
    # call can afford it: whole, their bytes in order, at every length
    # around a step's end, plain and unescaped, whole and framed.
    test "with strings: :copy, long strings are copied whole" do
      for size <- [32_767, 32_768, 32_769, 65_536, 65_537, 300_001],
          {text, json} <- [
            {String.duplicate("ab", div(size, 2)) <> String.duplicate("c", rem(size, 2)), nil},
            {String.duplicate("a\n", div(size, 2)) <> String.duplicate("c", rem(size, 2)),
             :escaped}
          ] do
        json = if json, do: String.replace(text, "\n", "\\n"), else: text
        assert {:ok, [^text]} = JSON.decode(~s([") <> json <> ~s("]), strings: :copy)
        assert [{:ok, [^text]}] = decode_lines_from([~s([") <> json <> ~s("]\n)], strings: :copy)
      end
    end

    test "with strings: :copy, the line in a decode error is a copy too" do
      line = "[" <> String.duplicate("x", 100)
      [{:error, error}, {:ok, 0}] = decode_lines_from([line <> "\n" <> @pad], strings: :copy)
      assert error.data == line
      assert kept_alive(error.data) == byte_size(line)
    end

    test "with strings: :copy, a long token in a decode error is part of the line's copy" do
      token = String.duplicate("9", 70) <> "e400"
      line = "[" <> token <> "]"
      [{:error, error}, {:ok, 0}] = decode_lines_from([line <> "\n" <> @pad], strings: :copy)
      assert error.token == token
      assert kept_alive(error.token) == byte_size(line)
    end

    # Read here: a short sub-binary sent to another process is copied, so
    # kept_alive/1 cannot see it. (On OTP 27.3.4.1 a binary on the heap is
    # given in bits: 40 for the token, still under the line's size.)
    test "a short token in a decode error is a copy that keeps neither line nor chunk alive" do
      token = "1e400"
      line = "[" <> token <> String.duplicate(" ", 100) <> "]"

      for opts <- [[], [strings: :copy]] do
        [{:error, error}, {:ok, 0}] = decode_lines_from([line <> "\n" <> @pad], opts)
        assert error.token == token
        assert :binary.referenced_byte_size(error.token) < byte_size(line)
      end
    end

    test "a string of a message that spanned chunks refers to the message alone" do
      message = ~s(["#{@long}"])
      {first, second} = String.split_at(message <> "\n", 10)
      [{:ok, [string]}, {:ok, 0}] = decode_lines_from([first, second <> @pad])
      assert kept_alive(string) <= byte_size(message) + 4096
    end
  end

  defp decode_lines(lines), do: decode_lines_from([Enum.map_join(lines, "", &(&1 <> "\n"))])

  defp decode_lines_from(chunks, opts \\ []) do
    McpFramer.Frames.frame(decode_framer(opts), chunks)
  end

  # binary_to_float wants digits on both sides of a dot and no bare "1E2".
  defp normalize_float(text) do
    case String.split(String.downcase(text), "e") do
      [mantissa] -> mantissa
      [mantissa, exponent] -> with_fraction(mantissa) <> "e" <> exponent
    end
  end

  defp with_fraction(mantissa),
    do: if(String.contains?(mantissa, "."), do: mantissa, else: mantissa <> ".0")
end
