defmodule McpFramer.TestFormatter do
  @moduledoc false
  # The test oracle for McpFramer.JSON.Formatter and `pretty:`: any bytes
  # laid out as Jason 1.4.5's Jason.Formatter lays them out, its rules
  # written out from its source (Jason cannot be installed on the
  # development machine), a token at a time:
  #
  #   * whitespace outside strings is dropped; a string, from its quote to
  #     the next quote no backslash escapes, is copied as it is;
  #   * an opening bracket starts a line of its own inside an array or
  #     object just opened, and follows the record separator at level 0
  #     once a bracket has been seen; the first item after it, unless a
  #     closing bracket, starts a line a level deeper, as each item after
  #     a comma does; so `[]` and `{}` stay as they are;
  #   * a closing bracket goes on a line of its own, a level up, unless
  #     its array or object is empty;
  #   * each colon is followed by the after-colon separator.
  #
  # A line is the line separator, then the indent once a level. A stray
  # closing bracket takes the level below 0, where Jason's formatter
  # raises if it must indent a line; here such a line has no indent.

  @whitespace ~c" \t\r\n"

  @typedoc "{indent, line separator, record separator, after colon}"
  @type separators :: {iodata(), iodata(), iodata(), iodata()}

  @spec lay_out(iodata(), separators()) :: binary()
  def lay_out(bytes, {indent, line, record, colon}) do
    separators = %{
      indent: IO.iodata_to_binary(indent),
      line: IO.iodata_to_binary(line),
      record: IO.iodata_to_binary(record),
      colon: IO.iodata_to_binary(colon)
    }

    bytes
    |> IO.iodata_to_binary()
    |> tokens(:first, false, [], separators)
    |> IO.iodata_to_binary()
  end

  # `minimize/1` with its default record separator: no lines, no indent,
  # nothing after a colon.
  @spec minimize(iodata()) :: binary()
  def minimize(bytes), do: lay_out(bytes, {"", "", "\n", ""})

  # `pretty_print/2`'s separators for options of which none is given twice.
  @spec separators(keyword()) :: separators()
  def separators(opts) do
    line = Keyword.get(opts, :line_separator, "\n")

    {Keyword.get(opts, :indent, "  "), line, Keyword.get(opts, :record_separator, line),
     Keyword.get(opts, :after_colon, " ")}
  end

  # `depth` is :first until a bracket opens; `empty` is whether the last
  # token opened an array or object (a colon leaves it as it is).
  defp tokens(<<>>, _depth, _empty, out, _separators), do: out

  defp tokens(<<byte, rest::binary>>, depth, empty, out, separators) when byte in @whitespace,
    do: tokens(rest, depth, empty, out, separators)

  defp tokens(<<open, rest::binary>>, depth, empty, out, separators) when open in ~c"[{" do
    before =
      cond do
        depth == :first -> []
        depth == 0 -> separators.record
        empty -> new_line(depth, separators)
        true -> []
      end

    tokens(rest, level(depth) + 1, true, [out, before, open], separators)
  end

  defp tokens(<<close, rest::binary>>, depth, empty, out, separators) when close in ~c"]}" do
    before = if empty, do: [], else: new_line(level(depth) - 1, separators)
    tokens(rest, level(depth) - 1, false, [out, before, close], separators)
  end

  defp tokens(<<?,, rest::binary>>, depth, _empty, out, separators),
    do: tokens(rest, depth, false, [out, ?, | new_line(level(depth), separators)], separators)

  defp tokens(<<?:, rest::binary>>, depth, empty, out, separators),
    do: tokens(rest, depth, empty, [out, ?:, separators.colon], separators)

  defp tokens(<<byte, rest::binary>>, depth, empty, out, separators) do
    out = [out, if(empty, do: new_line(depth, separators), else: []), byte]

    if byte == ?",
      do: string(rest, depth, out, separators),
      else: tokens(rest, depth, false, out, separators)
  end

  # Inside a string, up to its closing quote, a run at a time: strings
  # may be megabytes long.
  defp string(bytes, depth, out, separators) do
    case :binary.match(bytes, ["\"", "\\"]) do
      {at, 1} ->
        plain = binary_part(bytes, 0, at)

        case binary_part(bytes, at, byte_size(bytes) - at) do
          <<?", rest::binary>> ->
            tokens(rest, depth, false, [out, plain, ?"], separators)

          <<?\\, escaped, rest::binary>> ->
            string(rest, depth, [out, plain, ?\\, escaped], separators)

          <<?\\>> ->
            [out, plain, ?\\]
        end

      :nomatch ->
        [out, bytes]
    end
  end

  defp level(:first), do: 0
  defp level(depth), do: depth

  defp new_line(depth, separators),
    do: [separators.line | List.duplicate(separators.indent, max(level(depth), 0))]
end
