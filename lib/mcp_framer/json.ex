defmodule McpFramer.JSON do
  @moduledoc """
  Decodes a whole JSON document, such as an HTTP body or a file, exactly as
  `Jason.decode/2` (1.4.5) does with the same options, with the decoder
  that `McpFramer.new(decode: :json)` runs on each message. It also takes
  limits for untrusted documents, which Jason does not have (see
  `decode/2`).

      iex> McpFramer.JSON.decode(~s({"jsonrpc":"2.0","id":1,"result":{"ok":true}}))
      {:ok, %{"jsonrpc" => "2.0", "id" => 1, "result" => %{"ok" => true}}}

      iex> {:error, error} = McpFramer.JSON.decode(~s({"id":1,}))
      iex> Exception.message(error)
      "unexpected byte at position 8: 0x7D (\\"}\\")"

  ## What a document becomes

    * Objects become maps with binary keys (or atoms, with `:keys`). When
      a key repeats, its first occurrence wins: `{"a":1,"a":2}` gives
      `%{"a" => 1}` (or an error, with `duplicate_keys: :error`).
    * Arrays become lists; `true`, `false` and `null` become `true`,
      `false` and `nil`.
    * Strings become UTF-8 binaries with every escape decoded. Surrogate
      pairs are joined; a lone surrogate, invalid UTF-8 and an unescaped
      byte below 0x20 are errors. `"\\u0000"` is fine.
    * Integers become integers, bignums past 64 bits; `-0` is 0. As in
      Jason 1.4.1 and later, an integer's text may be at most 1,024
      characters long, sign included: a longer one is an error at its first
      byte, with the integer as its `token`. A number with a
      fraction or an exponent becomes the float that
      `:erlang.binary_to_float/1` would make: `1E2` is 100.0 and `-0.0` is
      -0.0. One too large for a float (`1e400`) is an error; one too small
      (`1.5e-400`) is 0.0.
    * Leading zeros, `2.`, `+1`, `.5`, `NaN` and `Infinity` are errors.
    * Any value may stand at the top level, with whitespace (space, tab, CR
      and LF) around it; anything else after it is an error.
    * Nesting depth is limited only by the document's size (or by
      `:max_depth`): the decoder keeps its own stack, so no document can
      overflow the native one.

  Errors are `McpFramer.DecodeError`s at the byte positions Jason reports.

  ## Memory

  A string of 64 bytes or more (from OTP 27 on, more than 64: the VM
  copies one of 64) is a sub-binary of the document: a decoded term keeps
  the whole document alive for as long as it holds such a string. For
  terms you keep for long, pass `strings: :copy`, and every string is a
  binary of its own. An error's `token` of 64 bytes or more is
  a sub-binary of its `data`, as in Jason: keeping the token keeps the
  line (with `strings: :copy`, the line's own copy).

  A key of up to 22 bytes that a call meets again, in one document or in
  the next lines a decoding framer is fed at once, is nearly always the
  same binary as before, made once: a `tools/list` result of hundreds of
  keys holds about one binary for each of its few dozen names.

  ## Encoding

  `encode/2`, `encode!/2`, `encode_to_iodata/2` and `encode_to_iodata!/2`
  write a term as `Jason.encode/2` (1.4.5) does, byte for byte, with its
  `:escape`, `:maps` and `:pretty` options; `encode_line/2` and
  `encode_line!/2` give the iodata of a message to write to a Port or
  stdout, its newline included (a line cannot be `pretty:`). What each
  term becomes, the errors, the memory the iodata keeps and the
  schedulers: `McpFramer.JSON.Encoder`.

      iex> McpFramer.JSON.encode!(%{"jsonrpc" => "2.0", "id" => 1, "result" => %{}})
      ~s({"id":1,"jsonrpc":"2.0","result":{}})

  ## Schedulers

  Decoding keeps `McpFramer`'s scheduler guarantee (see "Schedulers"
  there): a document that is large, or that turns out slow to decode, is
  decoded on a dirty CPU scheduler instead, as soon as its pace shows it
  would not finish in time, and the time each normal-scheduler call took
  is reported to the scheduler.
  """

  alias McpFramer.JSON.Encoder
  alias McpFramer.{Native, Preempted}

  @typedoc "What `Jason.decode/2` returns for a document."
  @type result :: {:ok, term()} | {:error, McpFramer.DecodeError.t()}

  # The options as the NIF takes them: {strings, keys, max_depth,
  # max_values, duplicate_keys}, 0 for a limit that is not set; a key
  # function in place of `keys` goes to the NIF as `:pairs`.
  @defaults {:reference, :strings, 0, 0, :first}
  @names [:strings, :keys, :max_depth, :max_values, :duplicate_keys, :floats, :objects]
  @largest_limit 0xFFFF_FFFF_FFFF_FFFF

  @doc """
  Decodes `input`, a binary or iodata.

  ## Options

    * `:strings` - `:reference` (default) or `:copy`; see "Memory" above.
    * `:keys` - what object keys become: `:strings` (default); `:atoms`,
      made with `String.to_atom/1`; or `:atoms!`, existing atoms only, as
      `String.to_existing_atom/1` makes them. Atoms are never garbage
      collected and the VM holds a limited number of them, so `:atoms`
      must not be used on untrusted input: a server that sends many
      distinct keys can exhaust the atom table and bring the VM down. Use
      `:atoms!` or strings for untrusted documents. As with Jason, a key
      that cannot become an atom raises what the `String` function raises
      (`ArgumentError`, or `SystemLimitError` for a key over 255
      characters with `:atoms`), and a key is converted once its pair is
      complete, so an error in its value is reported first.

      Or a function of one argument, called on each key as Jason calls
      it: on every occurrence of a key, once its pair is complete (at the
      `,` or `}` after its value), so an object's inner keys come before
      its own. Of keys it makes equal, the first in the document wins;
      `duplicate_keys: :error` compares keys as the document has them,
      before the function. In a document that is not JSON or goes past a
      limit it is called on the pairs completed before the error, so what
      it raises comes out of `decode/2` as it would from Jason's, and a
      thrown `{:position, p}` or `{:token, t, p}` becomes a
      `McpFramer.DecodeError` as in Jason. The whole document is decoded
      before the first call, and its maps are then made again in Elixir
      with the function's keys; `McpFramer.new/1` does not take a function.
    * `:max_depth` - a positive integer: the deepest nesting accepted,
      where a top-level array or object is depth 1. Default: none.
    * `:max_values` - a positive integer: the most values accepted, each
      scalar, array and object counting one (keys do not). Default: none.
    * `:duplicate_keys` - `:first` (default) keeps the first of a key
      that repeats within an object, as Jason does; `:error` rejects the
      document at the repeated key's opening quote. Keys are compared
      decoded: `"\\u0061"` repeats `"a"`.
    * `:floats` and `:objects` - only Jason's defaults, `:native` and
      `:maps`, are taken: `floats: :decimals` and `objects:
      :ordered_objects` need packages this library does not depend on.

  A document that goes past a limit is an error at the byte where it does:
  `{:error, %McpFramer.DecodeError{limit: option, limit_value: value}}`,
  with `token: nil`. The document is read left to right and the first
  thing wrong wins, so a syntax error before the limit is reported as
  the syntax error. A value is counted, and its depth checked, at its
  first byte, if that byte can begin a value (`[`, `{`, `"`, `-`, a digit,
  `t`, `f` or `n`): with `max_values: 4`, `[1,2,3,tru]` is past the limit
  at 7, and `[1,2,3,+]` a syntax error there. Of two limits passed at one
  byte, `:max_values` is reported. A rejected document costs no more than
  the bytes read up to its error.

      iex> {:error, error} = McpFramer.JSON.decode("[[1]]", max_depth: 1)
      iex> {error.position, error.limit, error.limit_value}
      {1, :max_depth, 1}

  Raises `ArgumentError` for input that is not iodata and for bad options,
  and, saying so, when the VM cannot allocate memory for the result.
  Options are a keyword list, as Jason's are typed; an option McpFramer
  does not know raises, naming it, where Jason ignores it (and Jason
  happens to take a map of options too).
  """
  @spec decode(iodata(), keyword()) :: result()
  def decode(input, opts \\ [])
  def decode(input, []) when is_binary(input), do: run(input, @defaults)
  def decode(input, opts), do: keyed(document!(input), options!(opts, "McpFramer.JSON"))

  # With a key function, the NIF gives each object as `{pairs}`, its keys
  # and values alternating in the document's order, and for a document that
  # is not JSON the keys of the pairs it completed before the error, in
  # that order: the function is then called where Jason calls it, inside
  # Jason's `try`.
  defp keyed(document, options) when is_function(elem(options, 1), 1) do
    fun = elem(options, 1)
    # What the function throws becomes an error that holds the document, a
    # copy of it with `strings: :copy`, as the NIF's errors do. The copy
    # is made by `IO.iodata_to_binary/1`, which yields as it goes:
    # `:binary.copy/1` copied 64 MB in one go, 32 ms.
    data = fn ->
      if elem(options, 0) == :copy, do: IO.iodata_to_binary([document, ""]), else: document
    end

    try do
      case run(document, put_elem(options, 1, :pairs)) do
        {:ok, value} ->
          {:ok, convert(value, fun)}

        {:error, error, completed} ->
          Enum.each(completed, fun)
          {:error, error}
      end
    catch
      {:position, position} ->
        {:error, struct!(McpFramer.DecodeError, position: position, data: data.())}

      {:token, token, position} ->
        {:error, struct!(McpFramer.DecodeError, token: token, position: position, data: data.())}
    end
  end

  defp keyed(document, options), do: run(document, options)

  # A pair's value is converted before its key. Pairs are gathered newest
  # first, and the map keeps the last of a repeated key in that list, the
  # first in the document, as Jason's `:maps.from_list/1` does. Large
  # lists and maps are made by McpFramer.Preempted, preempted as any code
  # is.
  defp convert({pairs}, fun), do: convert_pairs(pairs, fun, [], 0)
  defp convert([_ | _] = items, fun), do: convert_items(items, fun, [])
  defp convert(value, _fun), do: value

  defp convert_pairs([key, value | pairs], fun, acc, count) do
    value = convert(value, fun)
    convert_pairs(pairs, fun, [{fun.(key), value} | acc], count + 1)
  end

  defp convert_pairs([], _fun, acc, count), do: Preempted.from_list(acc, count)

  defp convert_items([item | items], fun, acc),
    do: convert_items(items, fun, [convert(item, fun) | acc])

  defp convert_items([], _fun, acc), do: Preempted.reverse(acc, [])

  defp run(document, options) do
    case Native.decode(document, options) do
      :continue_dirty -> Native.decode_dirty(document, options) |> finish(document, options)
      reply -> finish(reply, document, options)
    end
  end

  # A key the NIF could not make an atom of raises what Jason would raise,
  # from the same function. Should the atom have come to exist since the
  # NIF looked, the document is decoded once more.
  defp finish(reply, document, options, retried? \\ false)

  defp finish({:key_refused, key, _error}, document, options, retried?) do
    _atom =
      case elem(options, 1) do
        :atoms -> String.to_atom(key)
        :atoms! -> String.to_existing_atom(key)
      end

    if retried? do
      raise McpFramer.InternalError,
        message: "the NIF refused a key that #{inspect(elem(options, 1))} takes: #{inspect(key)}"
    end

    document |> Native.decode_dirty(options) |> finish(document, options, true)
  end

  defp finish(result, _document, _options, _retried?), do: result

  @doc """
  Like `decode/2`, but returns the term and raises `McpFramer.DecodeError`
  for a document that is not JSON or goes past a limit.

      iex> McpFramer.JSON.decode!("[1, 2.5, null]")
      [1, 2.5, nil]
  """
  @spec decode!(iodata(), keyword()) :: term()
  def decode!(input, opts \\ []) do
    case decode(input, opts) do
      {:ok, term} -> term
      {:error, error} -> raise error
    end
  end

  @doc """
  Encodes `term` as JSON text, as `Jason.encode/2` does: `{:ok, binary}`
  or `{:error, %McpFramer.EncodeError{}}`. Options: `:escape`, `:maps`
  and `:pretty` (see `McpFramer.JSON.Encoder`).
  """
  @spec encode(term(), [Encoder.option()]) ::
          {:ok, binary()} | {:error, McpFramer.EncodeError.t()}
  def encode(term, opts \\ []), do: Encoder.encode(term, opts, :binary)

  @doc """
  Like `encode/2`, but returns the binary and raises `McpFramer.EncodeError`.
  """
  @spec encode!(term(), [Encoder.option()]) :: binary()
  def encode!(term, opts \\ []), do: ok!(encode(term, opts))

  @doc """
  Like `encode/2`, but the text is iodata, in which a long string without
  escapes is the term's own binary rather than a copy.
  """
  @spec encode_to_iodata(term(), [Encoder.option()]) ::
          {:ok, iodata()} | {:error, McpFramer.EncodeError.t()}
  def encode_to_iodata(term, opts \\ []), do: Encoder.encode(term, opts, :iodata)

  @doc """
  Like `encode_to_iodata/2`, but returns the iodata and raises
  `McpFramer.EncodeError`.
  """
  @spec encode_to_iodata!(term(), [Encoder.option()]) :: iodata()
  def encode_to_iodata!(term, opts \\ []), do: ok!(encode_to_iodata(term, opts))

  @doc """
  Like `encode_to_iodata/2`, with a `\\n` after the text: one MCP stdio
  message, to write as it is.

      iex> IO.iodata_to_binary(McpFramer.JSON.encode_line!(%{"id" => 1}))
      ~s({"id":1}\\n)
  """
  @spec encode_line(term(), [Encoder.option()]) ::
          {:ok, iodata()} | {:error, McpFramer.EncodeError.t()}
  def encode_line(term, opts \\ []), do: Encoder.encode(term, opts, :line)

  @doc """
  Like `encode_line/2`, but returns the iodata and raises
  `McpFramer.EncodeError`: `Port.command(port, McpFramer.JSON.encode_line!(message))`.
  """
  @spec encode_line!(term(), [Encoder.option()]) :: iodata()
  def encode_line!(term, opts \\ []), do: ok!(encode_line(term, opts))

  defp ok!({:ok, text}), do: text
  defp ok!({:error, error}), do: raise(error)

  @doc false
  # The names of the decoding options, which McpFramer.new/1 takes too.
  def option_names, do: @names

  @doc false
  # The decoding options `opts` as the NIF takes them, or an ArgumentError
  # naming what is wrong; `caller` says whose options they are.
  def options!(opts, caller) do
    # Options that are all known and good are read in one pass, as a
    # caller of decode/2 gives them on every call; anything else, over
    # again, for what is wrong with it.
    case read(opts, @defaults) do
      {:ok, options} -> options
      :error -> check_options!(opts, caller)
    end
  end

  defp read([{name, value} | opts], options) do
    case option(name, value, options) do
      {:ok, options} -> read(opts, options)
      :error -> :error
    end
  end

  defp read([], options), do: {:ok, options}
  defp read(_opts, _options), do: :error

  defp check_options!(opts, caller) do
    opts = McpFramer.keyword!(opts, caller)

    case Keyword.split(opts, @names) do
      # Of an option given twice the last wins, the others unread (Jason
      # reads its options into a map).
      {known, []} ->
        Enum.reduce(Keyword.new(known), @defaults, &option!/2)

      {_known, unknown} ->
        raise ArgumentError,
              "unknown #{caller} option(s) #{inspect(Keyword.keys(unknown))}; " <>
                "the decoding options are #{Enum.map_join(@names, ", ", &inspect/1)}"
    end
  end

  defp option!({name, value}, options) do
    case option(name, value, options) do
      {:ok, options} -> options
      :error -> bad_option!(name, value)
    end
  end

  defp option(:strings, strings, options) when strings in [:reference, :copy],
    do: {:ok, put_elem(options, 0, strings)}

  defp option(:keys, keys, options) when keys in [:strings, :atoms, :atoms!],
    do: {:ok, put_elem(options, 1, keys)}

  defp option(:keys, fun, options) when is_function(fun, 1), do: {:ok, put_elem(options, 1, fun)}

  defp option(:max_depth, max, options) when is_integer(max) and max in 1..@largest_limit,
    do: {:ok, put_elem(options, 2, max)}

  defp option(:max_values, max, options) when is_integer(max) and max in 1..@largest_limit,
    do: {:ok, put_elem(options, 3, max)}

  defp option(:duplicate_keys, keys, options) when keys in [:first, :error],
    do: {:ok, put_elem(options, 4, keys)}

  defp option(:floats, :native, options), do: {:ok, options}
  defp option(:objects, :maps, options), do: {:ok, options}
  defp option(_name, _value, _options), do: :error

  defp bad_option!(:floats, :decimals) do
    raise ArgumentError,
          "floats: :decimals needs the decimal package, which McpFramer does not use; " <>
            "only floats: :native is offered"
  end

  defp bad_option!(:objects, :ordered_objects) do
    raise ArgumentError,
          "objects: :ordered_objects needs Jason.OrderedObject from the jason package; " <>
            "only objects: :maps is offered"
  end

  defp bad_option!(name, value) do
    raise ArgumentError,
          "expected #{inspect(name)} to be #{expected(name)}, got: #{inspect(value)}"
  end

  defp expected(:strings), do: ":reference or :copy"
  defp expected(:keys), do: ":strings, :atoms, :atoms! or a function of one argument"
  defp expected(:duplicate_keys), do: ":first or :error"
  defp expected(:floats), do: ":native"
  defp expected(:objects), do: ":maps"
  defp expected(_limit), do: "a positive integer up to #{@largest_limit}"

  defp document!(input) when is_binary(input), do: input

  defp document!(input) when is_list(input) do
    IO.iodata_to_binary(input)
  rescue
    ArgumentError -> raise not_iodata(input)
  end

  defp document!(input), do: raise(not_iodata(input))

  defp not_iodata(input) do
    ArgumentError.exception(
      "McpFramer.JSON expects a binary or iodata document, got: #{inspect(input)}"
    )
  end
end

defmodule McpFramer.DecodeError do
  @moduledoc """
  A document or message that is not JSON, as `Jason.DecodeError` describes
  it: `position` is the offset of the offending byte in `data` (its length
  at an unexpected end), and `token` holds the offending sequence when a
  whole one was read (a number too large, a bad `\\u` escape), else `nil`.
  `data` is the whole document, or the framed message.

  `limit` is `nil` for all of these, so that without options an error is
  exactly Jason's: the same fields, and the same message. A document that
  goes past a decoding option has `limit` naming it (`:max_depth`,
  `:max_values`, `:duplicate_keys`) and `limit_value` its value, with
  `token: nil` and `position` the byte where it goes past. In a framer, a
  key that cannot become an atom with `keys: :atoms` or `:atoms!` is such
  an error too, with `limit: :keys`, at the key's opening quote: a framer
  does not raise on what a server sends.
  """
  defexception [:position, :token, :data, limit: nil, limit_value: nil]

  @type t :: %__MODULE__{
          position: non_neg_integer(),
          token: binary() | nil,
          data: binary(),
          limit: nil | :max_depth | :max_values | :duplicate_keys | :keys,
          limit_value: nil | pos_integer() | atom()
        }

  @impl true
  def message(%__MODULE__{limit: limit, limit_value: value, position: position})
      when limit != nil do
    "#{limited(limit)} at position #{position} of the JSON document " <>
      "(#{limit}: #{inspect(value)})"
  end

  # Without a limit, the messages are Jason 1.4.5's, word for word.
  def message(%__MODULE__{position: position, token: token}) when is_binary(token) do
    "unexpected sequence at position #{position}: #{inspect(token)}"
  end

  # Past the end too, where a key function threw a position beyond it.
  def message(%__MODULE__{position: position, data: data})
      when is_binary(data) and position >= byte_size(data) do
    "unexpected end of input at position #{position}"
  end

  def message(%__MODULE__{position: position, data: data}) when is_binary(data) do
    byte = :binary.at(data, position)
    hex = inspect(byte, base: :hex)
    shown = if String.printable?(<<byte>>), do: "#{hex} (#{inspect(<<byte>>)})", else: hex

    "unexpected byte at position #{position}: #{shown}"
  end

  def message(%__MODULE__{position: position}) do
    "invalid JSON at position #{inspect(position)}"
  end

  defp limited(:max_depth), do: "nesting deeper than the limit"
  defp limited(:max_values), do: "more values than the limit"
  defp limited(:duplicate_keys), do: "a key repeated within its object"
  defp limited(:keys), do: "a key that cannot become an atom"
end
