defmodule McpFramer.EncodeTerms do
  @moduledoc false
  # Random terms for the encoding tests, drawn from the process's :rand
  # state (seed it with McpFramer.Seed.case!/4):
  #
  #   * mcp/0: what an MCP server sends, as JSON decodes it: maps with
  #     binary keys, lists, strings, integers, floats, booleans and nil, so
  #     that decoding the text gives the term back;
  #   * any/1: every kind of term the encoder takes: atom, integer, float,
  #     charlist and calendar keys, maps of over 32 pairs, bignums, the four
  #     calendar structs; with `errors: true`, now and then something Jason
  #     refuses: a tuple, a pid, a string that is not UTF-8, a struct, an
  #     improper list, a key String.Chars refuses.
  #
  # Strings mix plain words with every character some escape mode escapes,
  # and runs long enough to cross the encoder's 16- and 32-byte lanes.

  import Bitwise

  @words ~w(the file server tool result value request index query path build)
  @specials [
    "\"",
    "\\",
    "/",
    "<",
    ">",
    "&",
    "'",
    "\x7F",
    "\n",
    "\r\n",
    "\t",
    "\b",
    "\f",
    <<0>>,
    <<0x1F>>,
    <<0x1B>>,
    "é",
    "ÿ",
    "Ā",
    "߿",
    "ࠀ",
    "—",
    "\u2027",
    "\u2028",
    "\u2029",
    "日本語",
    "\uFFFF",
    "😀",
    "\u{10000}",
    "\u{10FFFF}"
  ]
  @calendar [~D[2024-01-02], ~T[03:04:05.123], ~N[2024-01-02 03:04:05]] ++
              [~U[2024-01-02 03:04:05Z]]
  @invalid [<<0xFF>>, <<0xC3>>, <<0xED, 0xA0, 0x80>>, <<0xF4, 0x90, 0x80, 0x80>>, <<0x80>>]

  defp pick(list), do: Enum.at(list, :rand.uniform(length(list)) - 1)
  defp chance(n), do: :rand.uniform(n) == 1

  @doc "Text of words, special characters and long plain runs."
  def text do
    count = pick([0, 1, 2, 5, 12, 30])

    Enum.map_join(1..count//1, fn _ ->
      case :rand.uniform(10) do
        n when n <= 5 -> pick(@words) <> " "
        n when n <= 9 -> pick(@specials)
        _ -> String.duplicate(pick(["x", "é", "ab"]), :rand.uniform(40))
      end
    end)
  end

  defp invalid_text do
    {prefix, suffix} = String.split_at(text(), :rand.uniform(4) - 1)
    prefix <> pick(@invalid) <> suffix
  end

  defp float do
    case :rand.uniform(4) do
      1 ->
        <<float::float>> = <<:rand.uniform(0x7FF0_0000_0000_0000) - 1::64>>
        if chance(2), do: -float, else: float

      2 ->
        :rand.uniform(100_000) / 100

      3 ->
        :rand.uniform() * 10 ** (:rand.uniform(40) - 20)

      4 ->
        pick([0.0, -0.0, 1.0, 100.0, 1.0e3, 1.0e15, 9_007_199_254_740_992.0, 5.0e-324])
    end
  end

  # Up to 1,024 characters, the longest integer Jason decodes.
  defp integer do
    case :rand.uniform(5) do
      1 -> :rand.uniform(1 <<< 64) - (1 <<< 63)
      2 -> (:rand.uniform(10 ** :rand.uniform(300)) - 1) * pick([1, -1])
      _ -> :rand.uniform(100_000) - 500
    end
  end

  @doc "An MCP message, as JSON decoding gives it."
  def mcp do
    id = integer()

    case :rand.uniform(5) do
      1 ->
        params = %{"progressToken" => id, "progress" => float(), "total" => :rand.uniform(100)}

        %{
          "jsonrpc" => "2.0",
          "method" => "notifications/progress",
          "params" => Map.put(params, "message", text())
        }

      2 ->
        content = for _ <- 1..:rand.uniform(3), do: %{"type" => "text", "text" => text()}
        result = %{"content" => content, "isError" => chance(4)}
        %{"jsonrpc" => "2.0", "id" => id, "result" => result}

      3 ->
        tools = for _ <- 1..:rand.uniform(4), do: tool()
        %{"jsonrpc" => "2.0", "id" => id, "result" => %{"tools" => tools}}

      4 ->
        error = %{"code" => -32_602, "message" => text(), "data" => json(3)}
        %{"jsonrpc" => "2.0", "id" => id, "error" => error}

      5 ->
        %{"jsonrpc" => "2.0", "id" => id, "method" => text(), "params" => json(4)}
    end
  end

  defp tool do
    properties =
      Map.new(1..pick([1, 3, 8, 33]), fn i ->
        {"p#{i}", %{"type" => pick(["string", "integer", "number"]), "description" => text()}}
      end)

    %{
      "name" => pick(@words) <> "_" <> pick(@words),
      "description" => text(),
      "inputSchema" => %{"type" => "object", "properties" => properties, "required" => []},
      "default" => if(chance(2), do: nil, else: float())
    }
  end

  # A value JSON decoding can give, nested at most `depth` more levels.
  defp json(0), do: scalar()

  defp json(depth) do
    case :rand.uniform(6) do
      1 ->
        for _ <- 1..:rand.uniform(4)//1, do: json(depth - 1)

      2 ->
        Map.new(1..pick(if depth > 1, do: [1, 3], else: [1, 3, 33]), fn _ ->
          {text(), json(depth - 1)}
        end)

      _ ->
        scalar()
    end
  end

  defp scalar do
    case :rand.uniform(6) do
      1 -> integer()
      2 -> float()
      3 -> pick([true, false, nil])
      _ -> text()
    end
  end

  @doc "Any term the encoder takes; with `errors: true`, some it refuses."
  def any(opts \\ []), do: any(4, Keyword.get(opts, :errors, false))

  defp any(0, errors), do: any_scalar(errors)

  defp any(depth, errors) do
    case :rand.uniform(7) do
      1 ->
        for _ <- 1..:rand.uniform(5)//1, do: any(depth - 1, errors)

      2 ->
        Map.new(1..pairs(depth), fn _ -> {key(errors), any(depth - 1, errors)} end)

      3 when errors ->
        if chance(6), do: [any(depth - 1, errors) | any_scalar(errors)], else: []

      _ ->
        any_scalar(errors)
    end
  end

  # Maps of over 32 pairs only near the leaves, so that terms stay small.
  defp pairs(depth) when depth > 1, do: pick([1, 2, 4])
  defp pairs(_depth), do: pick([1, 2, 5, 32, 33])

  defp any_scalar(errors) do
    case :rand.uniform(if errors, do: 12, else: 9) do
      1 ->
        integer()

      2 ->
        float()

      3 ->
        pick([true, false, nil, :ok, :"with \"quote\"", :é, :日本])

      4 ->
        pick(@calendar)

      n when n <= 9 ->
        text()

      10 ->
        invalid_text()

      11 ->
        pick([{1, 2}, self(), make_ref(), <<1::3>>, URI.parse("http://x"), 1..2])

      12 ->
        pick([[1 | 2], ["a" | "b"]])
    end
  end

  defp key(errors) do
    case :rand.uniform(if errors, do: 10, else: 9) do
      n when n <= 4 -> text()
      5 -> pick([:a, :b, :text, :é, nil, true, :"a\"b"])
      6 -> integer()
      7 -> pick([1.5, -0.0, 1.0e20])
      8 -> pick([~c"ab", ~c"text", [?x, "y"]])
      9 -> pick([~D[2024-01-02], URI.parse("http://k")])
      10 -> pick([{1}, self(), invalid_text(), [-1]])
    end
  end
end
