defmodule McpFramer.TestEncoder do
  @moduledoc false
  # The test oracle for McpFramer.JSON's encoding: `encode/2` gives the text
  # Jason 1.4.5's `Jason.encode/2` gives, or the error it reports, as
  # {reason, culprit}. Jason cannot be installed on the development
  # machine, so its rules are written out here, plainly, one clause per
  # kind of term, character by character:
  #
  #   * maps in Map.to_list/1's order, each key before its value; keys
  #     binaries, atoms (Atom.to_string/1), or String.Chars.to_string/1 of
  #     anything else; under maps: :strict, a key whose escaped text was
  #     written before in its map is {:duplicate_key, text};
  #   * strings checked as UTF-8 one character at a time: the first byte
  #     that starts no character is {:invalid_byte, {byte, string}};
  #   * every mode escapes `"`, `\`, \b \t \n \f \r by letter and the other
  #     bytes below 0x20 as \u00XX; :javascript_safe and :html_safe also
  #     U+2028 and U+2029; :html_safe also `/` (as \/) and `<` (\u003C);
  #     :unicode_safe every character past ASCII as \uXXXX, past U+FFFF as
  #     a surrogate pair; hex digits upper case;
  #   * floats as :erlang.float_to_binary(f, [:short]); Date, Time,
  #     NaiveDateTime and DateTime as to_iso8601/1, in quotes, unescaped;
  #     any other struct {:struct, struct}; tuples, pids, ports,
  #     references, functions and bitstrings {:unsupported, term}; a key
  #     String.Chars refuses {:invalid_key, key}; an improper list's tail
  #     {:improper_list, tail}.

  import Bitwise

  @calendar [Date, Time, NaiveDateTime, DateTime]

  @spec encode(term(), keyword()) :: {:ok, binary()} | {:error, {atom(), term()}}
  def encode(term, opts \\ []) do
    escape = Keyword.get(opts, :escape, :json)
    strict = Keyword.get(opts, :maps, :naive) == :strict
    {:ok, IO.iodata_to_binary(value(term, escape, strict))}
  catch
    {__MODULE__, error} -> {:error, error}
  end

  defp fail(error), do: throw({__MODULE__, error})

  defp value(nil, _, _), do: "null"
  defp value(true, _, _), do: "true"
  defp value(false, _, _), do: "false"
  defp value(atom, escape, _) when is_atom(atom), do: string(Atom.to_string(atom), escape)
  defp value(binary, escape, _) when is_binary(binary), do: string(binary, escape)
  defp value(integer, _, _) when is_integer(integer), do: Integer.to_string(integer)
  defp value(float, _, _) when is_float(float), do: :erlang.float_to_binary(float, [:short])
  defp value([], _, _), do: "[]"
  defp value(list, escape, strict) when is_list(list), do: ["[", items(list, escape, strict), "]"]

  defp value(%module{} = struct, _, _) when module in @calendar,
    do: [?", module.to_iso8601(struct), ?"]

  defp value(%_{} = struct, _, _), do: fail({:struct, struct})

  defp value(map, escape, strict) when is_map(map) do
    {pairs, _seen} =
      Enum.map_reduce(Map.to_list(map), MapSet.new(), fn {key, value}, seen ->
        text = IO.iodata_to_binary(escaped(key_text(key), escape))

        if strict and MapSet.member?(seen, text) do
          fail({:duplicate_key, text})
        end

        {[?", text, ?", ?:, value(value, escape, strict)], MapSet.put(seen, text)}
      end)

    ["{", Enum.intersperse(pairs, ","), "}"]
  end

  defp value(other, _, _), do: fail({:unsupported, other})

  defp items([item], escape, strict), do: [value(item, escape, strict)]

  defp items([item | rest], escape, strict) when is_list(rest) and rest != [],
    do: [value(item, escape, strict), "," | items(rest, escape, strict)]

  defp items([item | tail], escape, strict) do
    _ = value(item, escape, strict)
    fail({:improper_list, tail})
  end

  defp key_text(key) when is_binary(key), do: key
  defp key_text(key) when is_atom(key), do: Atom.to_string(key)

  defp key_text(key) do
    case String.Chars.to_string(key) do
      text when is_binary(text) -> text
    end
  rescue
    _ -> fail({:invalid_key, key})
  end

  defp string(text, escape), do: [?", escaped(text, escape), ?"]

  defp escaped(text, escape), do: chars(text, text, escape, [])

  defp chars(<<>>, _text, _escape, acc), do: Enum.reverse(acc)

  defp chars(<<char::utf8, rest::binary>>, text, escape, acc),
    do: chars(rest, text, escape, [char(char, escape) | acc])

  defp chars(<<byte, _::binary>>, text, _escape, _acc), do: fail({:invalid_byte, {byte, text}})

  @letters %{?" => ~S(\"), ?\\ => ~S(\\), ?\b => ~S(\b), ?\t => ~S(\t), ?\n => ~S(\n)}
  @letters Map.merge(@letters, %{?\f => ~S(\f), ?\r => ~S(\r)})

  defp char(char, _escape) when is_map_key(@letters, char), do: @letters[char]
  defp char(char, _escape) when char < 0x20, do: u(char)
  defp char(?/, :html_safe), do: ~S(\/)
  defp char(?<, :html_safe), do: u(?<)
  defp char(char, escape) when char in [0x2028, 0x2029] and escape != :json, do: u(char)
  defp char(char, :unicode_safe) when char > 0xFFFF, do: surrogates(char - 0x10000)
  defp char(char, :unicode_safe) when char > 0x7F, do: u(char)
  defp char(char, _escape), do: <<char::utf8>>

  defp surrogates(offset), do: [u(0xD800 ||| offset >>> 10), u(0xDC00 ||| (offset &&& 0x3FF))]

  defp u(unit), do: "\\u" <> String.pad_leading(Integer.to_string(unit, 16), 4, "0")
end
