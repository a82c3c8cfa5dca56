defmodule McpFramer.TestJSON do
  @moduledoc false
  # A strict JSON decoder (RFC 8259) for the integration tests: hex.pm, and
  # so Jason, is out of reach. A framed message that decodes is whole.

  def decode!(text) do
    {value, rest} = value(skip(text))

    case skip(rest) do
      "" -> value
      rest -> raise ArgumentError, "trailing bytes after JSON: #{inspect(rest, limit: 5)}"
    end
  end

  defp value("{" <> rest), do: object(skip(rest), %{})
  defp value("[" <> rest), do: array(skip(rest), [])
  defp value("\"" <> rest), do: string(rest, [])
  defp value("true" <> rest), do: {true, rest}
  defp value("false" <> rest), do: {false, rest}
  defp value("null" <> rest), do: {nil, rest}

  defp value(<<c, _::binary>> = text) when c == ?- or c in ?0..?9 do
    [number] = Regex.run(~r/^-?(0|[1-9]\d*)(\.\d+)?([eE][-+]?\d+)?/, text, capture: :first)
    rest = binary_part(text, byte_size(number), byte_size(text) - byte_size(number))
    {parse_number(number), rest}
  end

  defp value(text), do: raise(ArgumentError, "unexpected JSON: #{inspect(text, limit: 5)}")

  defp parse_number(number) do
    if String.contains?(number, [".", "e", "E"]),
      do: elem(Float.parse(number), 0),
      else: String.to_integer(number)
  end

  defp object("}" <> rest, acc), do: {acc, rest}

  defp object("\"" <> rest, acc) do
    {key, rest} = string(rest, [])
    ":" <> rest = skip(rest)
    {value, rest} = value(skip(rest))
    acc = Map.put(acc, key, value)

    case skip(rest) do
      "," <> rest -> object(skip(rest), acc)
      "}" <> rest -> {acc, rest}
    end
  end

  defp array("]" <> rest, []), do: {[], rest}

  defp array(text, acc) do
    {value, rest} = value(text)

    case skip(rest) do
      "," <> rest -> array(skip(rest), [value | acc])
      "]" <> rest -> {Enum.reverse([value | acc]), rest}
    end
  end

  # Runs of plain bytes are taken whole, so a 1 MiB string is cheap.
  defp string(text, acc) do
    case :binary.match(text, ["\"", "\\"]) do
      {at, 1} ->
        <<plain::binary-size(at), mark, rest::binary>> = text
        acc = [acc | plain]
        if mark == ?", do: {IO.iodata_to_binary(acc), rest}, else: escape(rest, acc)

      :nomatch ->
        raise ArgumentError, "unterminated JSON string"
    end
  end

  @escapes %{
    ?" => ?",
    ?\\ => ?\\,
    ?/ => ?/,
    ?b => ?\b,
    ?f => ?\f,
    ?n => ?\n,
    ?r => ?\r,
    ?t => ?\t
  }

  defp escape(<<"u", hex::binary-size(4), rest::binary>>, acc) do
    case {String.to_integer(hex, 16), rest} do
      {high, <<"\\u", low::binary-size(4), rest::binary>>} when high in 0xD800..0xDBFF ->
        <<code::utf16>> = <<high::16, String.to_integer(low, 16)::16>>
        string(rest, [acc | <<code::utf8>>])

      {code, rest} ->
        string(rest, [acc | <<code::utf8>>])
    end
  end

  defp escape(<<c, rest::binary>>, acc) when is_map_key(@escapes, c) do
    string(rest, [acc, @escapes[c]])
  end

  defp skip(<<c, rest::binary>>) when c in [?\s, ?\t, ?\n, ?\r], do: skip(rest)
  defp skip(text), do: text
end
