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

  test "a record_separator is taken, and one term is one record" do
    assert pretty([1], record_separator: "|") == pretty([1])
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

  test "on MCP terms, the text decodes as the compact text does and is it once squeezed" do
    :rand.seed(:exsss, {7, 7, 7})

    for _ <- 1..300 do
      term = EncodeTerms.mcp()
      compact = JSON.encode!(term)
      text = pretty(term)
      assert JSON.decode!(text) == JSON.decode!(compact)
      assert squeezed(text) == compact
    end
  end

  test "a large term is laid out on a dirty scheduler, and the same" do
    term = for i <- 1..20_000, do: %{"i" => i, "v" => [i, "x"]}
    text = pretty(term)
    assert byte_size(text) > 1_000_000
    assert squeezed(text) == JSON.encode!(term)
  end

  # The text without the whitespace outside its strings.
  defp squeezed(text), do: squeezed(text, false, false, [])

  defp squeezed(<<byte, rest::binary>>, true, escaped, acc),
    do: squeezed(rest, escaped or byte != ?", not escaped and byte == ?\\, [byte | acc])

  defp squeezed(<<byte, rest::binary>>, false, _escaped, acc) when byte in ~c' \n\r\t',
    do: squeezed(rest, false, false, acc)

  defp squeezed(<<byte, rest::binary>>, false, _escaped, acc),
    do: squeezed(rest, byte == ?", false, [byte | acc])

  defp squeezed(<<>>, _in_string, _escaped, acc),
    do: acc |> Enum.reverse() |> IO.iodata_to_binary()
end
