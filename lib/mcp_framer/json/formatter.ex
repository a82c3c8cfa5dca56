defmodule McpFramer.JSON.Formatter do
  @moduledoc ~S"""
  JSON text laid out for people, or squeezed, as `Jason.Formatter`
  (1.4.5) does it: `pretty_print/2` and `minimize/2`, with the same
  options and the same output, by the NIF that lays out `pretty:` for
  `McpFramer.JSON.encode/2`.

  The input is iodata of one or more JSON texts ("records"), with or
  without whitespace between them, such as the lines an MCP server
  writes. Whitespace outside strings is dropped; strings are copied as
  they are. Each array or object at the top level but the first starts
  after the record separator; a number, string or literal there does
  not. Nothing is checked: bytes that are not JSON are laid out by the
  same rules, without an error, as Jason's formatter lays them out
  where it does not raise (it may, on a closing bracket with no opener,
  or a comma before any bracket).

      iex> McpFramer.JSON.Formatter.pretty_print(~s({"id": 1, "result": {"tools": []}}))
      ~s({\n  "id": 1,\n  "result": {\n    "tools": []\n  }\n})

      iex> McpFramer.JSON.Formatter.minimize(~s({ "id" : 1 }\n\n[ 2, 3 ]))
      ~s({"id":1}\n[2,3])

  Like `pretty:`, a text longer than a normal scheduler can lay out
  within a call's time is laid out on a dirty CPU scheduler, where it
  stops soon after its caller dies: a layout grows with the square of
  the nesting, and a few KB of brackets may take gigabytes. The
  `_to_iodata` functions return the same binary as the others. Bad
  arguments raise `ArgumentError`; a laid-out text too large for memory
  raises `McpFramer.EncodeError` with `reason: :no_memory`.
  """

  alias McpFramer.{EncodeError, Native}

  @names [:indent, :line_separator, :record_separator, :after_colon]

  @typedoc "The options of `pretty_print/2` (`minimize/2` uses `:record_separator`)."
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
  def pretty_print(input, opts \\ []), do: lay_out!(input, layout!(opts, ""))

  @doc "As `pretty_print/2`: the laid-out text is one binary."
  @spec pretty_print_to_iodata(iodata(), opts()) :: iodata()
  def pretty_print_to_iodata(input, opts \\ []), do: pretty_print(input, opts)

  @doc """
  `input` without the whitespace outside its strings, each array or
  object at the top level but the first after `:record_separator`
  (iodata, `"\\n"` by default). As in Jason, it takes the options of
  `pretty_print/2`, uses only the first `:record_separator`, and lays
  out no lines, so the values of the other options and of a repeated
  `:record_separator` are not read. Unlike Jason's, it raises on an
  option of another name, and on a first `:record_separator` that is not
  iodata, where Jason's ignores the one and fails on the other only when
  the text is written out.
  """
  @spec minimize(iodata(), opts()) :: binary()
  def minimize(input, opts \\ []) do
    record = opts |> known!("") |> Keyword.get(:record_separator, "\n")
    lay_out!(input, {"", "", iodata!(:record_separator, record, ""), ""})
  end

  @doc "As `minimize/2`: the text is one binary."
  @spec minimize_to_iodata(iodata(), opts()) :: iodata()
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
          reraise ArgumentError,
                  "McpFramer.JSON.Formatter expects iodata text, got: #{inspect(input)}",
                  __STACKTRACE__
      end

    case lay_out(text, layout) do
      {:ok, laid_out} -> laid_out
      {:error, error} -> raise error
    end
  end

  @doc false
  # The options as the NIF takes them, {indent, line, record, colon}. As
  # Jason.Formatter reads them, later options win, and the first line
  # separator is the record separator too, unless one is given. `where`
  # ends each error's subject: "" here, " in :pretty" for the encoders.
  @spec layout!(opts(), String.t()) :: {binary(), binary(), binary(), binary()}
  def layout!(opts, where) do
    {indent, line, record, colon} =
      opts
      |> known!(where)
      |> Enum.reduce({"  ", "\n", nil, " "}, fn
        {:indent, value}, {_, line, record, colon} ->
          {iodata!(:indent, value, where), line, record, colon}

        {:line_separator, value}, {indent, _, record, colon} ->
          line = iodata!(:line_separator, value, where)
          {indent, line, record || line, colon}

        {:record_separator, value}, {indent, line, _, colon} ->
          {indent, line, iodata!(:record_separator, value, where), colon}

        {:after_colon, value}, {indent, line, record, _} ->
          {indent, line, record, iodata!(:after_colon, value, where)}
      end)

    {indent, line, record || line, colon}
  end

  defp known!(opts, where) do
    if not (is_list(opts) and Keyword.keyword?(opts)) do
      raise ArgumentError, "expected a keyword list of options#{where}, got: #{inspect(opts)}"
    end

    case for {name, _} <- opts, name not in @names, uniq: true, do: name do
      [] ->
        opts

      unknown ->
        raise ArgumentError,
              "unknown option(s) #{inspect(unknown)}#{where}; they are " <>
                Enum.map_join(@names, ", ", &inspect/1)
    end
  end

  defp iodata!(name, value, where) do
    IO.iodata_to_binary(value)
  rescue
    ArgumentError ->
      reraise ArgumentError,
              "expected #{inspect(name)}#{where} to be iodata, got: #{inspect(value)}",
              __STACKTRACE__
  end
end
