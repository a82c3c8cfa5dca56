defmodule McpFramer.JSON.Encoder do
  @moduledoc """
  Encodes terms as JSON text, byte for byte as `Jason.encode/2` (1.4.5)
  writes them, with its options. `McpFramer.JSON.encode/2`,
  `encode!/2`, `encode_to_iodata/2`, `encode_to_iodata!/2`,
  `encode_line/2` and `encode_line!/2` call this module; the walk over
  the term and the writing of its text are in the NIF.

      iex> McpFramer.JSON.encode(%{"jsonrpc" => "2.0", "id" => 1, "result" => %{ok: true}})
      {:ok, ~s({"id":1,"jsonrpc":"2.0","result":{"ok":true}})}

      iex> {:error, error} = McpFramer.JSON.encode(%{"text" => <<0xFF>>})
      iex> Exception.message(error)
      "invalid byte 0xFF in <<255>>"

  ## What a term becomes

    * Maps become objects, their pairs in the order `Map.to_list/1` gives
      them, for maps of any size. Keys may be binaries, atoms (`nil` is
      `"nil"`), integers, or anything `String.Chars` turns into a string,
      as `Jason` takes them (`1.5` gives `"1.5"`, `'ab'` gives `"ab"`).
    * Lists become arrays; `nil`, `true` and `false` become `null`, `true`
      and `false`; any other atom becomes the string of its name.
    * Binaries become strings. They must be valid UTF-8; `"` and `\\`
      are escaped with a backslash, `\\b \\f \\n \\r \\t` by their
      letters, and the other characters below U+0020 as `\\u00XX`, in
      upper case. See `:escape` for the others.
    * Integers of any size are written in decimal. Floats are written as
      `:erlang.float_to_binary(float, [:short])` writes them, as Jason
      does on OTP 24 and later: the fewest digits that read back as the
      same float, in plain or scientific notation, whichever is shorter
      (`0.1`, `100.0`, `1.0e3`, `1.2e-4`).
    * `Date`, `Time`, `NaiveDateTime` and `DateTime` structs become the
      string their `to_iso8601/1` gives.

  ## Options

    * `:escape` - `:json` (default) escapes only what JSON requires;
      `:javascript_safe` also escapes U+2028 and U+2029 (as `\\u2028` and
      `\\u2029`); `:html_safe` does too, and writes `/` as `\\/` and `<`
      as `\\u003C`; `:unicode_safe` escapes every character past ASCII as
      `\\uXXXX` (upper case), past U+FFFF as a surrogate pair.
      `:javascript` and `:unicode`, Poison's names, which Jason keeps, are
      taken for `:javascript_safe` and `:unicode_safe`.
    * `:maps` - `:naive` (default) writes every pair; `:strict` refuses a
      map two of whose keys have the same text, such as `%{:a => 1, "a"
      => 2}`, with the key in the error.
    * `:pretty` - `false` (default) for the compact text; `true` to lay
      it out as `Jason.Formatter.pretty_print/2` does, each item of an
      array or object on a line of its own, indented two spaces a level,
      `{}` and `[]` kept whole, a space after each colon; or a keyword
      list of that function's options, `:indent`, `:line_separator`,
      `:after_colon` and `:record_separator` (iodata), which take the
      place of those defaults. One term is one record, so
      `:record_separator` changes nothing. The laid-out text is one
      binary in every form; `encode_line/2` refuses `pretty:`, whose
      newlines would end the message. As in Jason, these options are
      read only once the term is encoded: a term that cannot be is an
      error, whatever they hold.

  Bad options raise `ArgumentError`: options are a keyword list, and an
  option McpFramer does not know raises, naming it, where Jason ignores
  it (and Jason happens to take a map of options too).

  ## Errors

  `encode/2` returns `{:error, %McpFramer.EncodeError{}}` where Jason
  returns or raises an error; the error's `value` holds the culprit:

    * a string that is not valid UTF-8 (`reason: :invalid_byte`, and
      Jason's message, `"invalid byte 0xFF in <<255>>"`);
    * under `maps: :strict`, a key written twice in one map
      (`:duplicate_key`, `"duplicate key: a"`);
    * a struct other than the four above (`:struct`): Jason needs its
      `Jason.Encoder` protocol for those, which McpFramer does not use, so
      turn such a struct into a map of the fields to send first;
    * a tuple, pid, port, reference, function or bitstring
      (`:unsupported`), a map key `String.Chars` cannot convert
      (`:invalid_key`, where Jason raises what `to_string/1` raises on
      it: `Protocol.UndefinedError` for a term `String.Chars` has no
      implementation for, such as a tuple, pid or map, `ArgumentError` or
      `UnicodeConversionError` for a list that is not chardata), and an
      improper list (`:improper_list`, where Jason raises
      `FunctionClauseError`).

  As in Jason, a `Date`, `Time`, `NaiveDateTime` or `DateTime` struct
  made by hand without its fields raises what its `to_iso8601/1` raises,
  unless an error comes before it in the text.

  Jason's `EncodeError` has one field, `message`; McpFramer's has it
  too, beside `reason`, `value` and `byte` (`McpFramer.EncodeError`).

  When a term holds more than one, the error is the first in the order
  the text is written.

  ## Memory

  `encode/2` returns one binary. In the iodata of `encode_to_iodata/2`
  and `encode_line/2` without `pretty:`, a string of 1,024 bytes or more
  that needs no escape is not copied, unless it is a map key: the iodata
  holds that binary itself, so keeping the iodata keeps it alive (and,
  for a sub-binary, the binary it is part of), as the term does. The
  rest of the text is one binary, which the iodata holds in parts.

  ## Schedulers

  No call holds a normal scheduler for 2 ms (the guarantee of
  `McpFramer`'s "Schedulers", which the tests check): a term whose
  encoding would take longer is encoded on a dirty CPU scheduler
  instead, as soon as that shows, and each call's time is reported to
  the scheduler; so is laying the text out for `pretty:`, which is done
  on a dirty CPU scheduler for text over 64 KiB or laid out over 256 KiB.
  A term holding a struct or a key that only Elixir can
  turn into text (a float, a charlist, a `String.Chars` struct) is
  first converted in Elixir, then encoded: such terms are slower.
  """

  alias McpFramer.{EncodeError, Native, Preempted}
  alias McpFramer.JSON.Formatter

  # :unicode and :javascript are Poison's names, which Jason still takes.
  @escapes [json: 0, unicode_safe: 1, javascript_safe: 2, html_safe: 3, unicode: 1, javascript: 2]
  # Bits 0-1 the escape, bit 2 :strict, bits 3-4 the form (see the NIF).
  @forms [binary: 0, iodata: 8, line: 16]
  @strict 4

  @calendar [Date, Time, NaiveDateTime, DateTime]

  # The most pairs of a map made again in one call: `:maps.map/2` makes
  # it with one `:maps.from_list/1`.
  @map_in_one_go McpFramer.Preempted.pairs_in_one_go()

  @typedoc "The options of `McpFramer.JSON.encode/2`."
  @type option ::
          {:escape,
           :json | :unicode_safe | :javascript_safe | :html_safe | :unicode | :javascript}
          | {:maps, :naive | :strict}
          | {:pretty, boolean() | Formatter.opts()}

  @doc false
  @spec encode(term(), [option()], :binary | :iodata | :line) ::
          {:ok, iodata()} | {:error, EncodeError.t()}
  def encode(term, [], form), do: compact(term, form(form))

  def encode(term, opts, form) do
    case flags!(opts) do
      {flags, false} ->
        compact(term, flags + form(form))

      {_flags, pretty} when form == :line ->
        # A bad `pretty:` is reported as such first.
        layout!(pretty)

        raise ArgumentError,
              "a line cannot be pretty-printed: its newlines would end the message; " <>
                "use encode/2 or encode_to_iodata/2 for pretty: text"

      # As Jason does, `pretty:` is read only to lay out a text: a term
      # that cannot be encoded is an error whatever it holds.
      {flags, pretty} ->
        with {:ok, text} <- compact(term, flags + form(:binary)) do
          Formatter.lay_out(text, layout!(pretty))
        end
    end
  end

  defp compact(term, flags) do
    case run(term, flags, nil) do
      :convert ->
        tag = make_ref()
        result(run(convert(term, tag), flags, tag), tag)

      reply ->
        result(reply, nil)
    end
  end

  defp run(term, flags, tag) do
    case Native.encode(term, flags, tag) do
      :continue_dirty -> run_dirty(term, flags, tag)
      :map_order -> learn_map_order(&run/3, term, flags, tag)
      reply -> reply
    end
  end

  defp run_dirty(term, flags, tag) do
    case Native.encode_dirty(term, flags, tag) do
      :map_order -> learn_map_order(&run_dirty/3, term, flags, tag)
      reply -> reply
    end
  end

  # Once a VM: the NIF learns which way the iterator of a map of over 32
  # pairs gives Map.to_list/1's order (it differs between OTP releases),
  # then encodes the term.
  defp learn_map_order(run, term, flags, tag) do
    map = Map.new(0..32, &{&1, &1})
    :ok = Native.encode_map_order(map, for({key, _} <- Map.to_list(map), do: key))
    run.(term, flags, tag)
  end

  defp result({:ok, _} = ok, _tag), do: ok

  # The first error in the text is a calendar struct whose to_iso8601/1
  # raised while the term was converted: raised here, as Jason raises it.
  defp result({:error, {:unsupported, {tag, :raised, {kind, reason, stacktrace}}}}, tag)
       when is_reference(tag),
       do: :erlang.raise(kind, reason, stacktrace)

  defp result({:error, reason}, _tag), do: {:error, EncodeError.exception(reason)}

  # Options are packed once, here, into the integer the NIF takes, but for
  # the form, and `:pretty`, which is laid out after. Known options are
  # read in one pass, the last of a repeated one winning; anything else,
  # over again, for what is wrong with it.
  defp flags!(opts), do: read(opts, :json, :naive, false, opts)

  defp read([{:escape, escape} | rest], _, maps, pretty, opts),
    do: read(rest, escape, maps, pretty, opts)

  defp read([{:maps, maps} | rest], escape, _, pretty, opts),
    do: read(rest, escape, maps, pretty, opts)

  defp read([{:pretty, pretty} | rest], escape, maps, _, opts),
    do: read(rest, escape, maps, pretty, opts)

  defp read([], escape, maps, pretty, _opts), do: {escape!(escape) + maps!(maps), pretty}
  defp read(_rest, _escape, _maps, _pretty, opts), do: check_flags!(opts)

  defp check_flags!(opts) do
    if not (is_list(opts) and Keyword.keyword?(opts)) do
      raise ArgumentError,
            "McpFramer.JSON expects a keyword list of options, got: #{inspect(opts)}"
    end

    # read/5 takes every list of known options, so one is unknown here.
    {:error, unknown} =
      Keyword.validate(Keyword.new(opts), escape: :json, maps: :naive, pretty: false)

    raise ArgumentError,
          "unknown McpFramer.JSON encoding option(s) #{inspect(unknown)}; " <>
            "the options are :escape, :maps and :pretty"
  end

  for {form, bits} <- @forms do
    defp form(unquote(form)), do: unquote(bits)
  end

  for {escape, bits} <- @escapes do
    defp escape!(unquote(escape)), do: unquote(bits)
  end

  defp escape!(escape) do
    raise ArgumentError,
          "expected :escape to be :json, :unicode_safe, :javascript_safe or :html_safe " <>
            "(or Poison's names, :unicode and :javascript), got: #{inspect(escape)}"
  end

  defp maps!(:naive), do: 0
  defp maps!(:strict), do: @strict

  defp maps!(maps) do
    raise ArgumentError, "expected :maps to be :naive or :strict, got: #{inspect(maps)}"
  end

  defp layout!(true), do: layout!([])
  defp layout!(pretty) when is_list(pretty), do: Formatter.layout!(pretty, " in :pretty")

  defp layout!(pretty) do
    raise ArgumentError,
          "expected :pretty to be true, false or a keyword list, got: #{inspect(pretty)}"
  end

  # The term, with what only Elixir can turn into text turned: the four
  # calendar structs into their ISO 8601 strings, and the keys of a map
  # that has keys other than binaries, atoms and integers through
  # String.Chars, the map then standing as {tag, pairs} in Map.to_list/1's
  # order (two keys may now have the same text). A map of over 10,000
  # pairs stands as its pairs too: `:maps.map/2` made it again in one
  # call of `:maps.from_list/1`, which held a scheduler 3-8 ms on 200,000
  # pairs. Lists are reversed by McpFramer.Preempted. What cannot be
  # turned is left as it is, for the NIF to report in its place in the
  # text; a calendar struct whose to_iso8601/1 raises stands as
  # {tag, :raised, what it raised}, which the NIF reports as a tuple, so
  # that it is raised only if no error comes before it.
  @doc false
  @spec convert(term(), reference()) :: term()
  def convert(%module{} = struct, tag) when module in @calendar, do: iso8601(module, struct, tag)
  def convert(%_{} = struct, _tag), do: struct

  def convert(map, tag) when is_map(map) do
    if map_size(map) <= @map_in_one_go and Enum.all?(Map.keys(map), &native_key?/1) do
      :maps.map(fn _key, value -> convert(value, tag) end, map)
    else
      {tag, convert_pairs(Map.to_list(map), tag, [])}
    end
  end

  def convert(list, tag) when is_list(list), do: convert_list(list, tag, [])
  def convert(other, _tag), do: other

  # Not a comprehension, which ends in `:lists.reverse/1`.
  defp convert_pairs([{key, value} | pairs], tag, acc),
    do: convert_pairs(pairs, tag, [{convert_key(key), convert(value, tag)} | acc])

  defp convert_pairs([], _tag, acc), do: Preempted.reverse(acc, [])

  defp convert_list([item | rest], tag, acc),
    do: convert_list(rest, tag, [convert(item, tag) | acc])

  # An improper list keeps its tail, which the NIF reports.
  defp convert_list(tail, _tag, acc), do: Preempted.reverse(acc, tail)

  defp iso8601(module, struct, tag) do
    module.to_iso8601(struct)
  catch
    kind, reason -> {tag, :raised, {kind, reason, __STACKTRACE__}}
  end

  defp native_key?(key), do: is_binary(key) or is_atom(key) or is_integer(key)

  # A key String.Chars refuses, or turns into something other than a
  # binary, stays: the NIF reports it as :invalid_key.
  defp convert_key(key) do
    if native_key?(key), do: key, else: text_key(key)
  end

  # String.Chars.to_string/1's spec promises a binary, which Dialyzer
  # takes at its word; an implementation need not keep it.
  @dialyzer {:nowarn_function, text_key: 1}
  defp text_key(key) do
    case String.Chars.to_string(key) do
      text when is_binary(text) -> text
      _other -> key
    end
  rescue
    _ -> key
  end
end
