defmodule McpFramer do
  @moduledoc """
  Splits the byte stream an MCP stdio server writes into newline-delimited
  messages, with the work done by a Rust NIF.

  It is a drop-in for `ConduitMcp.Client.Transport.Stdio.Framer`: the same
  functions, the same return values, the same rules. A Port in `:stream`
  mode hands over chunks cut at arbitrary points; `feed/2` turns them back
  into whole messages.

      iex> framer = McpFramer.new()
      iex> {:ok, [], framer} = McpFramer.feed(framer, "{\\"a\\":")
      iex> {:ok, messages, _framer} = McpFramer.feed(framer, "1}\\r\\n{}\\n")
      iex> messages
      ["{\\"a\\":1}", "{}"]

  ## Rules

    * A message ends at `\\n`. Exactly one `\\r` right before it is stripped,
      so CRLF output frames like LF; any other `\\r` is data (`"a\\r\\r\\n"`
      gives `"a\\r"`).
    * A line that is empty after that strip is skipped. A line of spaces is a
      message.
    * Messages are binaries with their bytes untouched: no UTF-8 or JSON check.
    * Each chunk is searched for newlines once; held bytes are never searched
      again, so a message split into many chunks costs linear time.
    * Bytes after the last `\\n` are held for the next chunk.
      `buffered_bytes/1` counts them (a held trailing `\\r` included). At the
      end of the stream they are an incomplete message: the caller drops them.

  ## Oversized messages

  `:max_message_bytes` (default 8 MiB) caps a message's length, its `\\r` and
  `\\n` not counted. A line of exactly the cap passes however it is split; a
  held partial of cap + 1 bytes that ends in `\\r` is not yet too long, since
  its `\\n` may come next.

  A longer line is detected as soon as that is certain, without holding more
  bytes, and also when it lies wholly inside one chunk. Every byte through
  the next `\\n` is then discarded and framing resumes after it: one oversized
  message costs only itself.

  A feed that found an oversized line returns
  `{:error, :message_too_large, messages, framer}`. The whole chunk was still
  consumed, `messages` holds every complete message of the chunk in order
  (before and after the discarded one), and `framer` is ready for the next
  chunk. Close the connection or keep feeding: that policy is the caller's.

  ## A framer is a value, backed by mutable state

  The state lives in the NIF and `feed/2` changes it in place, so only the
  framer returned by the most recent `feed/2` may be used. Feeding an older
  one, or asking its `buffered_bytes/1`, raises `ArgumentError` rather than
  give results that differ from the pure-Elixir framer. A framer can be sent
  to another process and fed there. If two processes feed the same framer at
  once, the second waits until the first is done and then gets
  `ArgumentError`, since the value it holds is stale by then. It waits by
  yielding, so no scheduler thread ever blocks, and a process misusing a
  stale copy cannot make the owner's feed fail.

  ## Memory

  Every byte the framer holds is in binaries that `:erlang.memory(:binary)`
  counts, and none is sized by `:max_message_bytes`:

    * A message that lies inside one chunk is a sub-binary of that chunk,
      without a copy. It keeps the whole chunk alive (up to 64 KiB for a
      Port) for as long as it is referenced; store `:binary.copy/1` of
      small messages you keep for long. From OTP 27 on, a message of 64
      bytes or fewer is a copy instead, as the VM's own sub-binaries that
      short are.
    * A message that spans chunks is copied once, into a binary of its
      own; it keeps alive at most its size plus 4 KiB
      (`:binary.referenced_byte_size/1`).
    * On OTP 27.3.4.1 (Debian trixie's) `:binary.referenced_byte_size/1`
      gives the size of a binary of 64 bytes or fewer in bits, 8 times too
      much. Such a binary lives on the process heap and keeps only itself
      alive; to count what larger ones keep alive there,
      `Process.info(pid, :binary)` lists every shared binary a process
      holds, with its size.
    * A framer holds at most its `buffered_bytes/1`, plus the rest of the
      chunk its partial message started in, plus 4 KiB, and 64 KiB of
      the NIF's memory for the messages of a call. Beside them come its
      own state (under 1 KiB) and the VM's header of each binary the held
      bytes are in, up to 64 bytes: one for each chunk of 1 KiB or more,
      which is kept rather than copied, and one for every 64 KiB gathered
      from shorter chunks. An oversized line
      is dropped without being held. A dropped framer is freed by garbage
      collection. If the BEAM cannot allocate room to hold an unfinished
      message, that message is discarded like an oversized one; if it
      cannot allocate a message the chunk completes, `feed/2` raises
      (see there).
    * The NIF allocates its buffers of 4 KiB or more with the VM's
      allocator, which `:erlang.memory(:system)` counts. Between calls
      each scheduler thread, normal or dirty CPU, keeps under 2.5 MiB of
      them for the next message, however large the messages it decoded
      or the terms it encoded were.

  ## Decoding

  With `decode: :json`, each message is decoded as it is framed, and comes
  back as what `Jason.decode/1` returns for it: `{:ok, term}`, or
  `{:error, %McpFramer.DecodeError{}}` whose `data` is the line. A line
  that is not JSON costs only itself. Everything else is unchanged: the
  same tuples, the cap, `buffered_bytes/1` and `stream/2`. The decoding
  rules are listed in `McpFramer.JSON`.

      iex> framer = McpFramer.new(decode: :json)
      iex> {:ok, items, _framer} = McpFramer.feed(framer, "{\\"id\\":1}\\nnope\\n")
      iex> items
      [ok: %{"id" => 1}, error: %McpFramer.DecodeError{position: 0, token: nil, data: "nope"}]

  A decoded string of 64 bytes or more (from OTP 27 on, more than 64: the
  VM copies one of 64) is a sub-binary of the chunk the message lay in, or
  of the message's own binary when it spanned chunks. Pass `strings:
  :copy` to make every string a binary of its own, for terms kept for
  long.

  Decoding keeps the scheduler guarantee (see "Schedulers" below). Each
  call decodes within a budget of its measured time and pauses when that
  is spent; a message that would hold a normal scheduler too long, because
  it is large or slow to decode, is decoded on a dirty CPU scheduler
  instead. A long one is sent there as soon as its pace shows it cannot
  finish in time, so little of it is decoded twice.

  The decoding options of `McpFramer.JSON.decode/2` (`:strings`, `:keys`,
  `:max_depth`, `:max_values`, `:duplicate_keys`) are options of `new/1`
  and `stream/2` too, with `decode: :json`. A line that goes past a limit
  is an error item, as is one whose key cannot become an atom with
  `keys: :atoms` or `:atoms!`: a framer never raises on what a server
  sends, and such a line costs only itself. For the same reason a framer
  does not take a key function; decode each message with
  `McpFramer.JSON.decode/2` for one.

  ## Schedulers

  No call holds a normal scheduler for 2 ms, whatever the chunk or the
  JSON; `test/scheduler_test.exs` checks it, on fresh memory. Chunks
  over 4 MiB are framed on a dirty CPU scheduler; on a normal one a call
  searches at most 256 KiB of its chunk, large messages are copied into
  place a slice per call, and long runs of messages are returned in
  parts, so the process can be descheduled in between. Each
  call reports the time it took to the scheduler, measured, or estimated
  from its size where reading the clock would cost a noticeable part of
  the call (a small chunk, a document of up to 4 KiB that does no more
  work than its size predicts), so a process that feeds many chunks in a
  row is preempted like any other. Each byte fed is
  searched for newlines once, apart from the line at which a call
  paused, searched again by the next, and the start of a chunk that
  completes a message of over 256 KiB from held bytes, searched again up
  to its newline for each slice of the message copied.
  """

  alias McpFramer.{Native, Preempted}

  # The settings (the cap, decode:) are the NIF's, asked for when shown,
  # so that no field can disagree with the framer.
  @enforce_keys [:resource, :generation]
  defstruct @enforce_keys

  @opaque t :: %__MODULE__{resource: reference(), generation: non_neg_integer()}

  @typedoc "A message: a binary, or with `decode: :json`, its decoded result."
  @type message :: binary() | McpFramer.JSON.result()

  @default_max_message_bytes 8 * 1024 * 1024
  @largest_cap 0xFFFF_FFFF_FFFF_FFFF

  @doc """
  A fresh framer.

  ## Options

    * `:max_message_bytes` - positive integer up to 2^64 - 1, default
      8 MiB (8_388_608).
    * `:decode` - `:json` to decode each message as `McpFramer.JSON.decode/2`
      would; `nil` (default) for binaries. See "Decoding" below.
    * `:strings` - with `decode: :json`, `:copy` makes every decoded string
      a binary of its own, as Jason's option of that name does;
      `:reference` (default) lets strings of 64 bytes or more refer to the
      message.
    * `:keys`, `:max_depth`, `:max_values`, `:duplicate_keys` - with
      `decode: :json`, as `McpFramer.JSON.decode/2` takes them, except a
      key function; and `:floats` and `:objects` as it takes them, with
      Jason's defaults (`:native`, `:maps`) alone.

  Raises `ArgumentError` for anything else: a non-keyword list, an unknown
  option, `:max_message_bytes` or `:decode` given twice, a cap that is not
  a positive integer, a bad decoding option, or a decoding option without
  `decode: :json`. A decoding option given twice takes its last value, as
  in `McpFramer.JSON.decode/2`.

      iex> McpFramer.new(max_message_bytes: 1024)
      #McpFramer<buffered_bytes: 0, max_message_bytes: 1024>
  """
  @spec new(keyword()) :: t()
  def new(opts \\ []) do
    opts
    |> validate_options!("McpFramer.new/1", [])
    |> framer()
  end

  defp framer({cap, decode_options}),
    do: %__MODULE__{resource: Native.new(cap, decode_options), generation: 0}

  @doc """
  Feeds the next chunk; returns the complete messages it finished, in order.

  Returns `{:ok, messages, framer}`, or `{:error, :message_too_large,
  messages, framer}` when the chunk held an oversized line (see the module
  docs). Use the returned framer from now on: the one passed in is stale.

  Raises `ArgumentError`, changing nothing, when `chunk` is not a binary or
  `framer` is not the latest value from `new/1` or `feed/2`. It raises too
  if the VM cannot allocate a message; a large chunk may have been framed
  in part by then, so treat the framer as lost.

      iex> framer = McpFramer.new(max_message_bytes: 3)
      iex> {:error, :message_too_large, ["ok"], framer} = McpFramer.feed(framer, "ok\\ntoo long\\n")
      iex> {:ok, ["yes"], _framer} = McpFramer.feed(framer, "yes\\n")
  """
  @spec feed(t(), binary()) ::
          {:ok, [message()], t()} | {:error, :message_too_large, [message()], t()}
  def feed(%__MODULE__{resource: resource, generation: generation} = framer, chunk)
      when is_binary(chunk) do
    case Native.feed(resource, generation, chunk) do
      {:ok, messages} -> {:ok, messages, advance(framer)}
      other -> finish(other, framer, chunk, [], :ok)
    end
  end

  def feed(%__MODULE__{resource: _, generation: _}, chunk) do
    raise ArgumentError, "McpFramer.feed/2 expects a binary chunk, got: #{inspect(chunk)}"
  end

  def feed(framer, _chunk), do: raise(not_a_framer(framer))

  # The NIF's replies, as native/mcp_framer_nif/src/outcome.rs defines
  # them, one clause each below:
  #
  #   reply                               generation  then
  #   {:ok | :error, items}               advances    done
  #   {:continue, tag, items, consumed}   advances    feed the rest
  #   :copying                            advances    feed the same chunk
  #   :continue_dirty                     advances    feed_dirty the chunk
  #   :busy                               stays       yield, ask again
  #   {:decode_dirty, reply}              as reply    decode its placeholders
  #
  # The NIF returns early rather than hold a normal scheduler too long. On
  # :busy another process holds the lock for a moment: it is either feeding
  # the same value, and this call will then find its framer stale, or it is
  # about to be refused for a stale one.
  defp finish({last_tag, messages}, framer, _chunk, acc, tag) when last_tag in [:ok, :error] do
    messages = join(acc, messages)

    case worst(tag, last_tag) do
      :ok -> {:ok, messages, advance(framer)}
      :error -> {:error, :message_too_large, messages, advance(framer)}
    end
  end

  defp finish({:continue, part_tag, messages, consumed}, framer, chunk, acc, tag) do
    framer = advance(framer)
    rest = binary_part(chunk, consumed, byte_size(chunk) - consumed)

    framer.resource
    |> Native.feed(framer.generation, rest)
    |> finish(framer, rest, [messages | acc], worst(tag, part_tag))
  end

  defp finish(:copying, framer, chunk, acc, tag) do
    framer = advance(framer)

    framer.resource
    |> Native.feed(framer.generation, chunk)
    |> finish(framer, chunk, acc, tag)
  end

  defp finish(:continue_dirty, framer, chunk, acc, tag) do
    framer = advance(framer)

    framer.resource
    |> Native.feed_dirty(framer.generation, chunk)
    |> finish(framer, chunk, acc, tag)
  end

  defp finish(:busy, framer, chunk, acc, tag), do: retry(framer, chunk, acc, tag, 1)

  # Messages a normal scheduler had no time to decode are decoded on a
  # dirty one, each in a call of its own.
  defp finish({:decode_dirty, result}, framer, chunk, acc, tag) do
    result
    |> decode_left_dirty(framer.resource)
    |> finish(framer, chunk, acc, tag)
  end

  # With the options the framer was made with, which the NIF keeps.
  defp decode_left_dirty({tag, items}, resource),
    do: {tag, Enum.map(items, &decode_item(&1, resource))}

  defp decode_left_dirty({:continue, tag, items, consumed}, resource),
    do: {:continue, tag, Enum.map(items, &decode_item(&1, resource)), consumed}

  # A framer does not raise on a key that cannot become an atom: that
  # message's item is the error.
  defp decode_item({:decode_dirty, message}, resource) do
    case Native.decode_framed_dirty(resource, message) do
      {:key_refused, _key, error} -> error
      result -> result
    end
  end

  defp decode_item(item, _resource), do: item

  # The items of the earlier calls' lists (`earlier`, newest first) in
  # call order, then `items`. Two lists, at most 16,384 items, are joined
  # with `++`; more are prepended by McpFramer.Preempted, as `++` would
  # hold the scheduler joining hundreds.
  defp join(earlier, items) when length(earlier) <= 2,
    do: Enum.reduce(earlier, items, &(&1 ++ &2))

  defp join(earlier, items), do: Enum.reduce(earlier, items, &Preempted.prepend/2)

  defp retry(framer, chunk, acc, tag, tries) do
    wait(tries)

    case Native.feed(framer.resource, framer.generation, chunk) do
      :busy -> retry(framer, chunk, acc, tag, tries + 1)
      result -> finish(result, framer, chunk, acc, tag)
    end
  end

  # Yield first: the lock is normally held for well under a microsecond.
  # A feed on a dirty scheduler may hold it for milliseconds; then sleep.
  defp wait(tries) when tries < 100, do: :erlang.yield()
  defp wait(_tries), do: Process.sleep(1)

  defp advance(%__MODULE__{generation: generation} = framer),
    do: %{framer | generation: generation + 1}

  defp worst(:ok, :ok), do: :ok
  defp worst(_tag, _other), do: :error

  @doc """
  Bytes held for an incomplete message (0 while discarding an oversized one).

      iex> {:ok, [], framer} = McpFramer.feed(McpFramer.new(), "{\\"partial")
      iex> McpFramer.buffered_bytes(framer)
      9
  """
  @spec buffered_bytes(t()) :: non_neg_integer()
  def buffered_bytes(%__MODULE__{resource: resource, generation: generation}),
    do: held_bytes(resource, generation, 0)

  def buffered_bytes(framer), do: raise(not_a_framer(framer))

  defp held_bytes(resource, generation, tries) do
    case Native.buffered_bytes(resource, generation) do
      :busy ->
        wait(tries)
        held_bytes(resource, generation, tries + 1)

      count ->
        count
    end
  end

  @doc """
  Lazily frames an enumerable of chunks, such as a file's
  `IO.binstream(file, 65_536)` or a list of binaries, into a stream of
  messages.

  Takes the options of `new/1` and:

    * `:on_oversize` - `:skip` (default) drops oversized lines and goes on;
      `:raise` raises `McpFramer.MessageTooLargeError` after emitting the
      messages of the chunk that held the oversized line: when the next
      chunk comes, or the chunks end. A consumer that stops taking
      messages before then does not see it.

  Bytes after the last newline are an incomplete message and are dropped.

  Raises `ArgumentError` at once for bad options or a `chunks` that is not
  enumerable, and when the stream is run, for a chunk that is not a binary.

      iex> ["a\\nb", "c\\r\\n", "\\n", "partial"] |> McpFramer.stream() |> Enum.to_list()
      ["a", "bc"]
  """
  @spec stream(Enumerable.t(), keyword()) :: Enumerable.t()
  def stream(chunks, opts \\ []) do
    {on_oversize, framer_opts} = pop_on_oversize!(opts)

    {cap, _decode_options} =
      settings = validate_options!(framer_opts, "McpFramer.stream/2", [:on_oversize])

    if not enumerable?(chunks) do
      raise ArgumentError,
            "McpFramer.stream/2 expects an enumerable of binary chunks, got: #{inspect(chunks)}"
    end

    Stream.transform(
      chunks,
      fn -> {framer(settings), nil} end,
      fn chunk, {framer, pending} ->
        raise_pending(pending)

        if not is_binary(chunk) do
          raise ArgumentError, "McpFramer.stream/2 expects binary chunks, got: #{inspect(chunk)}"
        end

        case feed(framer, chunk) do
          {:ok, messages, framer} ->
            {messages, {framer, nil}}

          {:error, :message_too_large, messages, framer} when on_oversize == :skip ->
            {messages, {framer, nil}}

          {:error, :message_too_large, messages, framer} ->
            {messages, {framer, cap}}
        end
      end,
      fn {_framer, pending} = acc ->
        raise_pending(pending)
        {[], acc}
      end,
      fn _acc -> :ok end
    )
  end

  defp raise_pending(nil), do: :ok

  defp raise_pending(cap) do
    raise McpFramer.MessageTooLargeError, max_message_bytes: cap
  end

  defp pop_on_oversize!(opts) do
    opts = keyword!(opts, "McpFramer.stream/2")
    once!(opts, [:on_oversize])

    case Keyword.pop(opts, :on_oversize, :skip) do
      {mode, rest} when mode in [:skip, :raise] ->
        {mode, rest}

      {mode, _rest} ->
        raise ArgumentError,
              "McpFramer.stream/2 expects :on_oversize to be :skip or :raise, got: #{inspect(mode)}"
    end
  end

  # A function is enumerable only as a reduce function, of two arguments;
  # a list, only a proper one.
  defp enumerable?(chunks) when is_function(chunks), do: is_function(chunks, 2)
  defp enumerable?(chunks) when is_list(chunks), do: proper_list?(chunks)
  defp enumerable?(chunks), do: Enumerable.impl_for(chunks) != nil

  defp proper_list?([_ | rest]), do: proper_list?(rest)
  defp proper_list?(rest), do: rest == []

  # The cap, and the decoding options as the NIF takes them (nil without
  # decode: :json). `caller` names the function whose options they are,
  # and `others` its own options, which `opts` no longer holds.
  defp validate_options!(opts, caller, others) do
    opts = keyword!(opts, caller)
    {decoding, opts} = Keyword.split(opts, McpFramer.JSON.option_names())
    once!(opts, [:max_message_bytes, :decode])

    case Keyword.validate(opts, max_message_bytes: @default_max_message_bytes, decode: nil) do
      {:ok, valid} ->
        decode = decode!(valid[:decode])
        {cap!(valid[:max_message_bytes]), decode_options!(decode, decoding, caller)}

      {:error, unknown} ->
        raise ArgumentError,
              "unknown #{caller} option(s) #{inspect(unknown)}; the options are " <>
                "#{Enum.map_join(others ++ [:max_message_bytes, :decode], ", ", &inspect/1)} " <>
                "and, with decode: :json, those of " <>
                "McpFramer.JSON.decode/2"
    end
  end

  # A framer's option given twice is refused, as Keyword.validate/2 does,
  # and named for what it is. (Decoding options given twice take the last,
  # as Jason's do.)
  defp once!(opts, names) do
    keys = for {key, _} <- opts, key in names, do: key

    case Enum.uniq(keys -- Enum.uniq(keys)) do
      [] ->
        :ok

      twice ->
        raise ArgumentError,
              "McpFramer option(s) #{inspect(twice)} given more than once; give each once"
    end
  end

  defp decode!(decode) when decode in [nil, :json], do: decode

  defp decode!(decode) do
    raise ArgumentError, "expected :decode to be :json or nil, got: #{inspect(decode)}"
  end

  defp decode_options!(:json, decoding, caller) do
    options = McpFramer.JSON.options!(decoding, caller)

    if is_function(elem(options, 1)) do
      raise ArgumentError,
            "a framer takes keys: :strings, :atoms or :atoms!, not a function, which could " <>
              "raise in the middle of a chunk's messages; decode each message with " <>
              "McpFramer.JSON.decode/2 instead"
    end

    options
  end

  defp decode_options!(nil, [], _caller), do: nil

  defp decode_options!(nil, [{name, value} | _], _caller) do
    raise ArgumentError,
          "the #{inspect(name)} option (got: #{inspect(value)}) applies only with decode: :json"
  end

  @doc false
  # Shared with McpFramer.JSON, whose functions take options too.
  def keyword!(opts, caller) do
    if is_list(opts) and Keyword.keyword?(opts) do
      opts
    else
      raise ArgumentError, "#{caller} expects a keyword list of options, got: #{inspect(opts)}"
    end
  end

  defp cap!(cap) when is_integer(cap) and cap > 0 and cap <= @largest_cap, do: cap

  defp cap!(cap) do
    raise ArgumentError,
          "expected :max_message_bytes to be a positive integer up to #{@largest_cap}, " <>
            "got: #{inspect(cap)}"
  end

  defp not_a_framer(value) do
    # Raw, so that a damaged %McpFramer{} is shown as it is.
    got = inspect(value, structs: false)
    ArgumentError.exception("expected a framer from McpFramer.new/1, got: #{got}")
  end

  defimpl Inspect do
    # Shows counts, never the held bytes themselves; never raises.
    def inspect(framer, _opts) do
      case settings(framer) do
        {cap, decode} ->
          decode = if decode, do: ", decode: #{inspect(decode)}", else: ""
          "#McpFramer<#{buffered(framer)}, max_message_bytes: #{cap}#{decode}>"

        nil ->
          "#McpFramer<not a framer>"
      end
    end

    defp settings(framer) do
      McpFramer.Native.settings(Map.get(framer, :resource))
    rescue
      ArgumentError -> nil
    end

    defp buffered(framer) do
      "buffered_bytes: #{McpFramer.buffered_bytes(framer)}"
    rescue
      # Only a later feed/2 makes a framer stale; any other refusal means
      # that its generation was altered.
      error in ArgumentError ->
        if String.starts_with?(error.message, "stale"), do: "stale", else: "altered"
    end
  end
end

defmodule McpFramer.MessageTooLargeError do
  @moduledoc """
  Raised by `McpFramer.stream/2` with `on_oversize: :raise` when a line is
  longer than `:max_message_bytes`.
  """
  defexception [:max_message_bytes]

  @impl true
  def message(%{max_message_bytes: cap}) when is_integer(cap) do
    "an MCP message was longer than max_message_bytes (#{cap} bytes) and was discarded"
  end

  def message(_error) do
    "an MCP message was longer than max_message_bytes and was discarded"
  end
end

defmodule McpFramer.InternalError do
  @moduledoc """
  Raised when the NIF finds one of its own invariants broken: a bug in
  McpFramer, never a mistake of the caller's. It is not raised for bad
  arguments (those raise `ArgumentError`) nor for anything a server
  sends. Please report it with the message; the framer that raised it
  cannot be used again.
  """
  defexception [:message]

  @impl true
  def message(%{message: message}) do
    "McpFramer internal error: #{message}. This is a bug in mcp_framer; please report it"
  end
end
