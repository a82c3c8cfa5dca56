defmodule McpFramer.FormatterTest do
  # McpFramer.JSON.Formatter, as Jason.Formatter (1.4.5) lays out JSON
  # text it is given: the layout of `pretty:` (test/encode_pretty_test.exs
  # holds its rules), with the whitespace between tokens dropped first, and
  # one record after another.
  use ExUnit.Case, async: true

  alias McpFramer.{EncodeTerms, JSON, TestFormatter}
  alias McpFramer.JSON.Formatter

  doctest Formatter

  # `text` with whitespace of every kind put between its tokens, outside
  # strings, where JSON allows it.
  defp spaced(text) do
    for <<byte <- text>>, reduce: {[], false, false} do
      {out, in_string, escaped} ->
        space = if in_string, do: [], else: Enum.random(["", " ", "\n", "\t ", "\r\n  "])
        in_string = if in_string, do: escaped or byte != ?", else: byte == ?"
        {[out, space, byte], in_string, in_string and not escaped and byte == ?\\}
    end
    |> elem(0)
    |> IO.iodata_to_binary()
  end

  test "pretty_print/2 drops the whitespace between tokens and lays out as pretty: does" do
    :rand.seed(:exsss, {3, 1, 4})

    for _ <- 1..200, opts <- [[], [indent: "\t", line_separator: "\r\n", after_colon: ""]] do
      term = EncodeTerms.mcp()
      pretty = JSON.encode!(term, pretty: if(opts == [], do: true, else: opts))
      assert Formatter.pretty_print(spaced(JSON.encode!(term)), opts) == pretty
      assert Formatter.pretty_print(spaced(pretty), opts) == pretty
    end
  end

  test "minimize/2 drops the whitespace between tokens and nothing else" do
    :rand.seed(:exsss, {2, 7, 1})

    for _ <- 1..200 do
      compact = JSON.encode!(EncodeTerms.mcp())
      assert Formatter.minimize(spaced(compact)) == compact
      assert Formatter.minimize(JSON.encode!(JSON.decode!(compact), pretty: true)) == compact
    end
  end

  test "records follow one another, each after the record separator" do
    records = ~s({"a":[1]}  [] \n\n{}\n"s" 1)
    assert Formatter.pretty_print(records) == ~s({\n  "a": [\n    1\n  ]\n}\n[]\n{}"s"1)
    assert Formatter.pretty_print(records, line_separator: "\r\n") =~ ~s(\r\n}\r\n[]\r\n{})
    assert Formatter.pretty_print(records, record_separator: "|") =~ ~s(\n}|[]|{})
    assert Formatter.minimize(records) == ~s({"a":[1]}\n[]\n{}"s"1)
    assert Formatter.minimize(records, record_separator: ["<", "|"]) == ~s({"a":[1]}<|[]<|{}"s"1)
  end

  test "the _to_iodata functions give the same text, and iodata is read as its binary" do
    text = ~s({"a": ["b", {"c" :1}]}\n[2])
    iodata = [~c"{\"a\"", [": [\"b", ?"], ", {\"c\" :1}]}\n" | "[2]"]

    for input <- [text, iodata] do
      assert Formatter.pretty_print(input) == Formatter.pretty_print(text)

      assert IO.iodata_to_binary(Formatter.pretty_print_to_iodata(input)) ==
               Formatter.pretty_print(text)

      assert IO.iodata_to_binary(Formatter.minimize_to_iodata(input, [])) ==
               Formatter.minimize(text)
    end
  end

  test "a text too long for a normal scheduler is laid out whole" do
    term = for i <- 1..20_000, do: %{"i" => i, "v" => [i, "x y"]}
    text = spaced(JSON.encode!(term))
    assert byte_size(text) > 1_000_000
    assert Formatter.pretty_print(text) == JSON.encode!(term, pretty: true)
    assert Formatter.minimize(text) == JSON.encode!(term)
  end

  test "the _to_iodata functions take the same options" do
    opts = [indent: "\t", line_separator: "\r\n", after_colon: "", record_separator: "|"]
    text = ~s({"a": [1]} [2])

    assert IO.iodata_to_binary(Formatter.pretty_print_to_iodata(text, opts)) ==
             Formatter.pretty_print(text, opts)

    assert IO.iodata_to_binary(Formatter.minimize_to_iodata(text, opts)) ==
             Formatter.minimize(text, opts)
  end

  test "the record separator is the first :line_separator, unless one is given" do
    assert Formatter.pretty_print("[1] [2]", line_separator: "a", line_separator: "b") ==
             "[b  1b]a[b  2b]"
  end

  test "minimize/2 takes pretty_print/2's options and uses the first :record_separator" do
    opts = [indent: "x", record_separator: "a", line_separator: "y", record_separator: "b"]
    assert Formatter.minimize("[1] [2]", opts) == "[1]a[2]"
  end

  test "minimize/2 does not read the options it does not use, as Jason's does not" do
    opts = [indent: 5, line_separator: :x, record_separator: "a", record_separator: 5]
    assert Formatter.minimize("[1] [2]", opts) == "[1]a[2]"
    assert_raise ArgumentError, fn -> Formatter.minimize("[1] [2]", record_separator: 5) end
  end

  test "a closing bracket with no opener is laid out as Jason lays it out" do
    # Below level 0 an opener starts no record, and a line has no indent.
    assert Formatter.minimize("[1]][2]") == "[1]][2]"
    assert Formatter.pretty_print("[1]][2]", indent: "") == "[\n1\n]\n][\n2\n]"
  end

  test "bytes that are not JSON are laid out by the same rules, without an error" do
    :rand.seed(:exsss, {5, 9, 2})
    pieces = ["{", "}", "[", "]", ",", ":", "\"", "\\", " ", "\n", "1", "é", <<0xFF>>]

    for _ <- 1..1000 do
      bytes = for _ <- 1..:rand.uniform(40), into: "", do: Enum.random(pieces)
      opts = [indent: "\t", record_separator: "|", after_colon: "_"]

      assert Formatter.pretty_print(bytes, opts) ==
               TestFormatter.lay_out(bytes, {"\t", "\n", "|", "_"})

      assert Formatter.minimize(bytes) == TestFormatter.minimize(bytes)
    end
  end

  test "an unknown option given twice is named once" do
    assert_raise ArgumentError, ~r/unknown option\(s\) \[:width\];/, fn ->
      Formatter.pretty_print("[]", width: 2, width: 3)
    end
  end

  test "a text laid out too large for memory raises EncodeError" do
    deep = String.duplicate("[", 16_000) <> String.duplicate("1]", 16_000)

    assert_raise McpFramer.EncodeError, ~r/could not allocate memory/, fn ->
      Formatter.pretty_print(deep, indent: :binary.copy(" ", 1024 * 1024))
    end
  end

  test "bad arguments raise ArgumentError, each naming the problem" do
    # As data, which Elixir 1.20's type checker does not judge.
    for {function, input, opts, message} <- [
          {:pretty_print, :text, [],
           ~r/^McpFramer.JSON.Formatter expects iodata text, got: :text$/},
          {:minimize, nil, [], ~r/^McpFramer.JSON.Formatter expects iodata text, got: nil$/},
          {:pretty_print, "[]", [indent: 2], ~r/:indent to be iodata/},
          {:pretty_print, "[]", [width: 2], ~r/unknown option\(s\) \[:width\]/},
          {:pretty_print, "[]", :x, ~r/expected a keyword list of options, got: :x/},
          {:minimize, "[]", [width: ""], ~r/unknown option\(s\) \[:width\]/},
          {:minimize, "[]", [record_separator: 1], ~r/:record_separator to be iodata/}
        ] do
      assert_raise ArgumentError, message, fn -> apply(Formatter, function, [input, opts]) end
    end
  end
end
