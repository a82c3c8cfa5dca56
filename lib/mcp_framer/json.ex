defmodule McpFramer.JSON do
  @moduledoc """
  Decodes a whole JSON document, such as an HTTP body or a file, exactly as
  `Jason.decode/1` (1.4.5, default options) does, with the decoder that
  `McpFramer.new(decode: :json)` runs on each message.

      iex> McpFramer.JSON.decode(~s({"jsonrpc":"2.0","id":1,"result":{"ok":true}}))
      {:ok, %{"jsonrpc" => "2.0", "id" => 1, "result" => %{"ok" => true}}}

      iex> {:error, error} = McpFramer.JSON.decode(~s({"id":1,}))
      iex> Exception.message(error)
      "unexpected byte 0x7D (\\"}\\") at position 8 of the JSON document"

  ## What a document becomes

    * Objects become maps with binary keys. When a key repeats, its first
      occurrence wins: `{"a":1,"a":2}` gives `%{"a" => 1}`.
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
    * Nesting depth is limited only by the document's size: the decoder
      keeps its own stack, so no document can overflow the native one.

  Errors are `McpFramer.DecodeError`s at the byte positions Jason reports.

  ## Memory

  A string of 64 bytes or more is a sub-binary of the document: a decoded
  term keeps the whole document alive for as long as it holds such a
  string. For terms you keep for long, pass `strings: :copy`, and every
  string is a binary of its own. An error's `token` of 64 bytes or more is
  a sub-binary of its `data`, as in Jason: keeping the token keeps the
  line (with `strings: :copy`, the line's own copy).

  ## Encoding

  `encode/2`, `encode!/2`, `encode_to_iodata/2` and `encode_to_iodata!/2`
  write a term as `Jason.encode/2` (1.4.5) does, byte for byte, with its
  `:escape` and `:maps` options; `encode_line/2` and `encode_line!/2`
  give the iodata of a message to write to a Port or stdout, its newline
  included. What each term becomes, the errors, the memory the iodata
  keeps and the schedulers: `McpFramer.JSON.Encoder`.

      iex> McpFramer.JSON.encode!(%{"jsonrpc" => "2.0", "id" => 1, "result" => %{}})
      ~s({"id":1,"jsonrpc":"2.0","result":{}})

  ## Schedulers

  No call holds a normal scheduler for a millisecond: a document that is
  large, or that turns out slow to decode, is decoded on a dirty CPU
  scheduler instead, as soon as its pace shows it would not finish in
  time, and the time each normal-scheduler call took is reported to the
  scheduler.
  """

  alias McpFramer.JSON.Encoder
  alias McpFramer.Native

  @typedoc "What `Jason.decode/1` returns for a document."
  @type result :: {:ok, term()} | {:error, McpFramer.DecodeError.t()}

  @doc """
  Decodes `input`, a binary or iodata.

  ## Options

    * `:strings` - `:reference` (default) or `:copy`; see "Memory" above.

  Raises `ArgumentError` for input that is not iodata and for bad options.
  """
  @spec decode(iodata(), keyword()) :: result()
  def decode(input, opts \\ []) do
    copy_strings = copy_strings!(opts)
    document = document!(input)

    case Native.decode(document, copy_strings) do
      :continue_dirty -> Native.decode_dirty(document, copy_strings)
      result -> result
    end
  end

  @doc """
  Like `decode/2`, but returns the term and raises `McpFramer.DecodeError`
  for a document that is not JSON.

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
  (see `McpFramer.JSON.Encoder`).
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
  # Shared with McpFramer.new/1, which takes the same option.
  def strings!(strings) when strings in [:reference, :copy], do: strings

  def strings!(strings) do
    raise ArgumentError, "expected :strings to be :reference or :copy, got: #{inspect(strings)}"
  end

  defp copy_strings!(opts) do
    opts = McpFramer.keyword!(opts, "McpFramer.JSON")

    case Keyword.validate(opts, strings: :reference) do
      {:ok, valid} ->
        strings!(valid[:strings]) == :copy

      {:error, unknown} ->
        raise ArgumentError,
              "unknown McpFramer.JSON option(s) #{inspect(unknown)}; the only option is :strings"
    end
  end

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
  """
  defexception [:position, :token, :data]

  @type t :: %__MODULE__{
          position: non_neg_integer(),
          token: binary() | nil,
          data: binary()
        }

  @impl true
  def message(%__MODULE__{position: position, token: token}) when is_binary(token) do
    "invalid sequence #{inspect(token)} at position #{position} of the JSON document"
  end

  def message(%__MODULE__{position: position, data: data})
      when is_binary(data) and position >= byte_size(data) do
    "the JSON document ended unexpectedly at position #{position}"
  end

  def message(%__MODULE__{position: position, data: data}) when is_binary(data) do
    byte = :binary.at(data, position)
    hex = "0x" <> String.pad_leading(Integer.to_string(byte, 16), 2, "0")

    shown = if String.printable?(<<byte>>), do: "#{hex} (#{inspect(<<byte>>)})", else: hex

    "unexpected byte #{shown} at position #{position} of the JSON document"
  end

  def message(%__MODULE__{position: position}) do
    "invalid JSON at position #{inspect(position)}"
  end
end
