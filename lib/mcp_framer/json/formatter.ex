defmodule McpFramer.JSON.Formatter do
  @moduledoc ~S"""
  JSON text laid out for people, or squeezed, as `Jason.Formatter`
  (1.4.5) does it: `pretty_print/2` and `minimize/2`, with the same
  options and the same output, by the NIF that lays out `pretty:` for
  `McpFramer.JSON.encode/2`.

  The input is iodata of one or more JSON texts ("records"), with or
  without whitespace between them, such as the lines an MCP server
  writes. Whitespace outside strings is dropped; strings are copied as
  they are. Each array or object after the first record's starts after
  the record separator. Nothing is checked: bytes that are not JSON are
  laid out by the same rules, without an error (where Jason's formatter
  may raise, on a closing bracket with no opener).

      iex> McpFramer.JSON.Formatter.pretty_print(~s({"id": 1, "result": {"tools": []}}))
      ~s({\n  "id": 1,\n  "result": {\n    "tools": []\n  }\n})

      iex> McpFramer.JSON.Formatter.minimize(~s({ "id" : 1 }\n\n[ 2, 3 ]))
      ~s({"id":1}\n[2,3])

  Like `pretty:`, a text longer than a normal scheduler can lay out
  within a call's time is laid out on a dirty CPU scheduler. The
  `_to_iodata` functions return the same binary as the others. Bad
  arguments raise `ArgumentError`; a laid-out text too large for memory
  raises `McpFramer.EncodeError` with `reason: :no_memory`.
  """

  alias McpFramer.{EncodeError, Native}

  @names [:indent, :line_separator, :record_separator, :after_colon]

  @typedoc "The options of `pretty_print/2`; `minimize/2` takes `:record_separator`."
  @type opts :: [{:indent | :line_separator | :record_separator | :after_colon, iodata()}]

  @doc """
  `input` laid out: each item of a non-empty array or object on a line of
  its own, indented once a level; `[]` and `{}` as they are; a space after
  each colon.

  Options (iodata), each in place of its default:

    * `:indent` - once a level at the start of a line (two spaces);
    * `:line_separator` - between lines (`"\\n"`);
    * `:record_separator` - before each array or object at the top level
      but the first (the first `:line_separator` given, or `"\\n"`);
    * `:after_colon` - after each colon (a space).

  Of an option given twice, the last wins.
  """
  @spec pretty_print(iodata(), opts()) :: binary()
  def pretty_print(input, opts \\ []), do: lay_out!(input, layout!(opts, :formatter))

  @doc "As `pretty_print/2`: the laid-out text is one binary."
  @spec pretty_print_to_iodata(iodata(), opts()) :: iodata()
  def pretty_print_to_iodata(input, opts \\ []), do: pretty_print(input, opts)

  @doc """
  `input` without the whitespace outside its strings, each array or
  object at the top level but the first after `:record_separator`
  (iodata, `"\\n"` by default), its only option.
  """
  @spec minimize(iodata(), [{:record_separator, iodata()}]) :: binary()
  def minimize(input, opts \\ []) do
    record =
      case Keyword.validate(keywords!(opts, :formatter), record_separator: "\n") do
        {:ok, valid} -> iodata!(:record_separator, valid[:record_separator], :formatter)
        {:error, unknown} -> raise ArgumentError, unknown(unknown, [:record_separator])
      end

    lay_out!(input, {"", "", record, ""})
  end

  @doc "As `minimize/2`: the text is one binary."
  @spec minimize_to_iodata(iodata(), [{:record_separator, iodata()}]) :: iodata()
  def minimize_to_iodata(input, opts), do: minimize(input, opts)

  @doc false
  # `text` laid out by `layout` (from layout!/2): {:ok, binary} or
  # {:error, %EncodeError{}}.
  @spec lay_out(binary(), {binary(), binary(), binary(), binary()}) ::
          {:ok, binary()} | {:error, EncodeError.t()}
  def lay_out(text, layout) do
    case Native.pretty(text, layout) do
      :continue_dirty -> result(Native.pretty_dirty(text, layout))
      reply -> result(reply)
    end
  end

  defp result({:ok, _} = ok), do: ok
  defp result({:error, reason}), do: {:error, EncodeError.exception(reason)}

  defp lay_out!(input, layout) do
    text =
      try do
        IO.iodata_to_binary(input)
      rescue
        ArgumentError ->
          reraise ArgumentError, "expected iodata, got: #{inspect(input)}", __STACKTRACE__
      end

    case lay_out(text, layout) do
      {:ok, laid_out} -> laid_out
      {:error, error} -> raise error
    end
  end

  @doc false
  # The options as the NIF takes them, {indent, line, record, colon}. As
  # Jason.Formatter reads them, later options win, and the first line
  # separator is the record separator too, unless one is given. `context`
  # is :formatter, or :pretty for the option of McpFramer.JSON's encoders.
  @spec layout!(opts(), :formatter | :pretty) :: {binary(), binary(), binary(), binary()}
  def layout!(opts, context) do
    {indent, line, record, colon} =
      opts
      |> keywords!(context)
      |> Enum.reduce({"  ", "\n", nil, " "}, fn
        {:indent, value}, {_, line, record, colon} ->
          {iodata!(:indent, value, context), line, record, colon}

        {:line_separator, value}, {indent, _, record, colon} ->
          line = iodata!(:line_separator, value, context)
          {indent, line, record || line, colon}

        {:record_separator, value}, {indent, line, _, colon} ->
          {indent, line, iodata!(:record_separator, value, context), colon}

        {:after_colon, value}, {indent, line, record, _} ->
          {indent, line, record, iodata!(:after_colon, value, context)}

        _option, _layout ->
          unknown = for {name, _} <- opts, name not in @names, uniq: true, do: name
          raise ArgumentError, unknown(unknown, @names, context)
      end)

    {indent, line, record || line, colon}
  end

  defp keywords!(opts, context) do
    if not (is_list(opts) and Keyword.keyword?(opts)) do
      raise ArgumentError, not_keywords(opts, context)
    end

    opts
  end

  defp not_keywords(opts, :formatter),
    do: "McpFramer.JSON.Formatter expects a keyword list of options, got: #{inspect(opts)}"

  defp not_keywords(opts, :pretty),
    do: "expected :pretty to be true, false or a keyword list, got: #{inspect(opts)}"

  defp iodata!(name, value, context) do
    IO.iodata_to_binary(value)
  rescue
    ArgumentError ->
      reraise ArgumentError,
              "expected #{inspect(name)}#{within(context)} to be iodata, got: #{inspect(value)}",
              __STACKTRACE__
  end

  defp unknown(unknown, names, context \\ :formatter) do
    of = if context == :pretty, do: " :pretty", else: ""

    "unknown#{of} option(s) #{inspect(unknown)}; they are " <>
      Enum.map_join(names, ", ", &inspect/1)
  end

  defp within(:formatter), do: ""
  defp within(:pretty), do: " in :pretty"
end
