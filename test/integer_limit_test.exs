defmodule McpFramer.IntegerLimitTest do
  # Jason 1.4.1 and later (1.4.5 is current) refuse an integer whose text,
  # sign included, is longer than 1,024 bytes: a token error at its first
  # byte, whose token is the whole integer. One test per rule, each through
  # McpFramer.JSON and through a decoding framer, against the oracle too.
  use ExUnit.Case, async: true

  alias McpFramer.{Chunks, DecodeError, Frames, JSON, TestJSON}

  @mib 1024 * 1024

  # An integer of `chars` characters, the sign included.
  defp integer(chars, sign), do: sign <> "7" <> String.duplicate("1", chars - 1 - byte_size(sign))

  # The integer alone, in an array, in an object and among other items:
  # each line, the position at which the integer starts, and its term.
  defp placements(text) do
    n = String.to_integer(text)

    [
      {text, 0, n},
      {"[#{text}]", 1, [n]},
      {~s({"n": #{text}}), 6, %{"n" => n}},
      {"[1, #{text}, 2]", 4, [1, n, 2]}
    ]
  end

  defp framed(line) do
    [item] = Frames.frame(McpFramer.new(decode: :json), [line <> "\n"])
    item
  end

  defp decoded_both_ways(line) do
    direct = JSON.decode(line)
    assert framed(line) == direct
    direct
  end

  test "an integer of up to 1,024 characters, sign included, is decoded exactly" do
    for chars <- [1023, 1024],
        sign <- ["", "-"],
        {line, _, term} <- placements(integer(chars, sign)) do
      assert decoded_both_ways(line) == {:ok, term}
      assert TestJSON.decode(line) == {:ok, term}
    end
  end

  test "a longer integer is an error at its first byte, with the integer as its token" do
    for chars <- [1025, 1026],
        sign <- ["", "-"],
        {line, at, _} <- placements(integer(chars, sign)) do
      text = integer(chars, sign)

      assert {:error, %DecodeError{position: ^at, token: ^text, data: ^line}} =
               decoded_both_ways(line)

      assert TestJSON.decode(line) == {:error, %{position: at, token: text}}
    end
  end

  test "a longer integer cut off by the end of the line is still its token error" do
    for sign <- ["", "-"] do
      long = integer(1025, sign)
      assert {:error, %DecodeError{position: 1, token: ^long}} = decoded_both_ways("[" <> long)
      assert TestJSON.decode("[" <> long) == {:error, %{position: 1, token: long}}

      short = "[" <> integer(1024, sign)
      at = byte_size(short)
      assert {:error, %DecodeError{position: ^at, token: nil}} = decoded_both_ways(short)
      assert TestJSON.decode(short) == {:error, %{position: at, token: nil}}
    end
  end

  test "a long integer part before a fraction or an exponent makes a float" do
    digits = integer(1025, "")

    for line <- ["#{digits}.5e-1030", "-#{digits}e-1000", "[#{digits}E-1030]"] do
      assert {:ok, value} = decoded_both_ways(line)
      assert {:ok, ^value} = TestJSON.decode(line)
    end

    # Too large for a float: the float's own token error.
    line = "#{digits}.5"
    assert {:error, %DecodeError{position: 0, token: ^line}} = decoded_both_ways(line)
  end

  test "an 8 MiB line of digits fed as a Port would gives its error item in well under a second" do
    line = "[" <> :binary.copy("7", 8 * @mib - 2) <> "]"
    chunks = Chunks.port(line <> "\n")

    # Decoded in quadratic time, as before the limit, this took 49 s; in
    # linear time about 0.2 s, alone on a busy machine. Of three tries,
    # one under a second will do: a busy machine may slow any one down.
    times =
      Enum.reduce_while(1..3, [], fn _, times ->
        framer = McpFramer.new(decode: :json)
        {micros, [item]} = :timer.tc(fn -> Frames.frame(framer, chunks) end)
        assert {:error, %DecodeError{position: 1, token: token}} = item
        assert token == binary_part(line, 1, 8 * @mib - 2)
        if micros < 1_000_000, do: {:halt, [micros | times]}, else: {:cont, [micros | times]}
      end)

    assert hd(times) < 1_000_000,
           "took #{inspect(Enum.map(times, &div(&1, 1000)))} ms, last first"
  end
end
