defmodule McpFramer.EncodePrettyTest do
  # `pretty:`, as Jason 1.4.5 takes it: the compact text laid out by
  # Jason.Formatter.pretty_print/2's rules, one test per rule. The expected
  # text is written out from those rules (Jason.Formatter's source).
  use ExUnit.Case, async: true

  alias McpFramer.{EncodeError, EncodeTerms, JSON}

  defp pretty(term, opts \\ true), do: JSON.encode!(term, pretty: opts)

  test "each item of an array or object goes on a line of its own, indented two spaces a level" do
    assert pretty(%{"a" => %{"b" => [1, 2]}, "c" => nil}) == """
           {
             "a": {
               "b": [
                 1,
                 2
               ]
             },
             "c": null
           }\
           """
  end

  test "an empty array or object stays [] or {}, wherever it is" do
    assert pretty([]) == "[]"
    assert pretty(%{}) == "{}"
    assert pretty([[], %{}, [[]]]) == "[\n  [],\n  {},\n  [\n    []\n  ]\n]"
    assert pretty(%{"a" => %{}}) == ~s({\n  "a": {}\n})
  end

  test "a top-level scalar is its compact text" do
    for term <- [1, -2.5, "s", nil, true, :atom] do
      assert pretty(term) == JSON.encode!(term)
    end
  end

  test "strings are written as they are, brackets, commas, colons and escapes in them included" do
    assert pretty(%{"k{,:}" => ~s(v["\\],)}) == ~s({\n  "k{,:}": "v[\\"\\\\],"\n})
    long = String.duplicate("{[,:", 400)
    assert pretty([long]) == ~s([\n  "#{long}"\n])
  end

  test "indent, line_separator and after_colon replace the defaults, as iodata" do
    opts = [indent: [?\t], line_separator: "\r\n", after_colon: ""]
    assert pretty(%{"a" => [1]}, opts) == ~s({\r\n\t"a":[\r\n\t\t1\r\n\t]\r\n})
    assert pretty(%{"a" => 1}, indent: ["-", ["-"]]) == ~s({\n--"a": 1\n})
  end

  test "pretty: true and pretty: [] lay out with the defaults; pretty: false does not" do
    term = %{"a" => [1, %{"b" => 2}]}
    assert pretty(term, []) == pretty(term, true)
    assert pretty(term, false) == JSON.encode!(term)
  end

  test "a record_separator is accepted, and changes nothing: one term is one record" do
    assert pretty([1], record_separator: "|") == pretty([1])
  end

  test "of an option given twice the last wins, the first unread, as Jason reads them" do
    assert JSON.encode!([1], pretty: true, pretty: false) == "[1]"
    assert pretty([1], indent: "a", indent: "b") == "[\nb1\n]"
    assert JSON.encode!("é", escape: :unicode_safe, escape: :json) == ~s("é")
    assert JSON.encode!("é", escape: :bogus, escape: :json) == ~s("é")
    assert JSON.encode!(%{"a" => 1}, maps: :bogus, maps: :strict) == ~s({"a":1})
  end

  test "every form but a line gives the same text" do
    term = %{"a" => [String.duplicate("x", 5000), 1]}
    assert {:ok, text} = JSON.encode(term, pretty: true)
    assert IO.iodata_to_binary(JSON.encode_to_iodata!(term, pretty: true)) == text

    assert_raise ArgumentError, ~r/a line cannot be pretty-printed/, fn ->
      JSON.encode_line(term, pretty: true)
    end
  end

  test "errors are those of the compact text" do
    assert {:error, %EncodeError{reason: :invalid_byte}} =
             JSON.encode(["a", <<0xFF>>], pretty: true)

    assert {:error, %EncodeError{reason: :unsupported}} = JSON.encode([{1}], pretty: [])
  end

  test "a term that cannot be encoded is an error whatever pretty:'s options, as in Jason" do
    # Jason reads them only to lay out a text it has encoded.
    for pretty <- [[width: 2], [indent: 2], :yes] do
      assert {:error, %EncodeError{reason: :invalid_byte}} = JSON.encode(<<0xFF>>, pretty: pretty)
      assert {:error, %EncodeError{}} = JSON.encode_to_iodata([{1}], pretty: pretty)
      assert_raise EncodeError, fn -> JSON.encode!(<<0xFF>>, pretty: pretty) end
      assert_raise ArgumentError, fn -> JSON.encode!(1, pretty: pretty) end
    end
  end

  test "on random MCP terms and options, the text is what the rules make of the term" do
    :rand.seed(:exsss, {7, 7, 7})

    for _ <- 1..300,
        {opts, layout} <- [
          {true, {"  ", "\n", " "}},
          {[indent: "\t", line_separator: "\r\n", after_colon: ""], {"\t", "\r\n", ""}}
        ] do
      term = EncodeTerms.mcp()
      assert pretty(term, opts) == IO.iodata_to_binary(laid_out(term, layout, 0))
    end
  end

  test "a large term is laid out whole" do
    term = for i <- 1..20_000, do: %{"i" => i, "v" => [i, "x"]}
    text = pretty(term)
    assert byte_size(text) > 1_000_000
    assert text == IO.iodata_to_binary(laid_out(term, {"  ", "\n", " "}, 0))
  end

  test "a text too large to lay out in memory is a :no_memory error, not a crash" do
    deep = Enum.reduce(1..16_000, [1], fn _, inner -> [inner] end)

    assert {:error, %EncodeError{reason: :no_memory, value: size}} =
             JSON.encode(deep, pretty: [indent: :binary.copy(" ", 1024 * 1024)])

    assert size > 100_000_000_000_000
  end

  # McpFramer.Native.pretty/2 lays out on a normal scheduler at most 64
  # KiB of text, laid out to at most 256 KiB (native/mcp_framer_nif/src/
  # encode/pretty.rs); past either it replies :continue_dirty, and
  # pretty_dirty/2 lays the text out.
  test "a normal scheduler lays out up to 64 KiB of text to up to 256 KiB; more is :continue_dirty" do
    layout = {"  ", "\n", "\n", " "}
    string = fn size -> ~s(") <> String.duplicate("x", size - 2) <> ~s(") end
    assert McpFramer.Native.pretty(string.(65_536), layout) == {:ok, string.(65_536)}
    assert McpFramer.Native.pretty(string.(65_537), layout) == :continue_dirty

    # "[1]" laid out is "[", a line, the indent, "1", a line and "]".
    indent = fn width -> {String.duplicate(" ", width), "\n", "\n", " "} end
    laid_out = "[\n" <> String.duplicate(" ", 262_139) <> "1\n]"
    assert McpFramer.Native.pretty("[1]", indent.(262_139)) == {:ok, laid_out}
    assert McpFramer.Native.pretty("[1]", indent.(262_140)) == :continue_dirty
    assert {:ok, _} = McpFramer.Native.pretty_dirty("[1]", indent.(262_140))
  end

  test "a :no_memory error's message gives the size the text was to reach at least" do
    error = %EncodeError{reason: :no_memory, value: 123_456}

    assert Exception.message(error) ==
             "could not allocate memory for a JSON text of at least 123456 bytes"
  end

  # The rules, from the term: a scalar or key as its compact text; an
  # empty list or map as [] or {}; else each item on a line of its own,
  # one indent deeper, and the closing bracket on a line at the opener's
  # depth. Pairs in Map.to_list/1's order, which the compact text has.
  defp laid_out(list, {indent, line, _colon} = layout, depth) when is_list(list) and list != [] do
    items = Enum.map(list, &[line, indents(indent, depth + 1), laid_out(&1, layout, depth + 1)])
    ["[", Enum.intersperse(items, ","), line, indents(indent, depth), "]"]
  end

  defp laid_out(map, {indent, line, colon} = layout, depth)
       when is_map(map) and map_size(map) > 0 do
    pairs =
      for {key, value} <- Map.to_list(map) do
        key = JSON.encode!(to_string(key))
        [line, indents(indent, depth + 1), key, ":", colon, laid_out(value, layout, depth + 1)]
      end

    ["{", Enum.intersperse(pairs, ","), line, indents(indent, depth), "}"]
  end

  defp laid_out(value, _layout, _depth), do: JSON.encode!(value)

  defp indents(indent, depth), do: List.duplicate(indent, depth)
end
