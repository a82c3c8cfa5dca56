# make soak [SOAK_SECONDS=n]: what a hostile server sends, through the
# decoder inside a real VM, for n seconds (make test runs a short one).
#
# Each batch is a stream of mutated MCP messages (bit flips, truncations,
# splices, two on a line, deep nesting, huge numbers and strings) with
# random decoding options, fed in random cuts, Port reads among them, to
# a decoding framer beside a plain one (one batch in ten has a message of
# several MiB, in chunks of up to 16 MiB), and each message decoded by
# McpFramer.JSON too. Every item and result must agree with the oracle
# (test/support/json.ex), and the framers with each other. Each term
# decoded is encoded again, in a random escape and map mode, as a
# binary, as iodata or as a line, or laid out with a random `pretty:`,
# and must give the encoding oracle's text (test/support/encode_oracle.ex),
# laid out by the formatter oracle (test/support/formatter_oracle.ex);
# each message that decoded, and each that did not with few brackets, is
# laid out and minimized by McpFramer.JSON.Formatter, as that oracle does
# it.
# A batch runs in a process of its own, so that its garbage goes with it;
# at the end the VM must be alive and hold no more binary memory than it
# did at the start.
#
# SOAK_SEED=n replays a run: a failure prints the seed, its batch and the
# message.
#
# make soak builds the NIF under Cargo.toml's checked profile
# (MCP_FRAMER_CARGO_PROFILE=checked): debug assertions and overflow
# checks, so that a store past a vector loop's room, an unsafe call
# whose preconditions fail, or an overflow panics (the batch dies and the
# soak fails) instead of passing unseen. The soak stops at once if it
# was asked for that NIF and has another.
#
# With Jason itself on the code path (it is on no registry here; built
# outside the repository, as for make bench), the oracle is held to it
# too, message by message, with the options Jason has, and so are the
# encoding and formatter oracles:
#
#   MIX_ENV=test elixir -pa <Jason's ebin> -S mix run test/soak.exs 600

defmodule McpFramer.Soak do
  import McpFramer.Agreement
  import McpFramer.JSONDocuments

  alias McpFramer.{Chunks, DecodeError, Seed, TestEncoder, TestFormatter, TestJSON}
  alias McpFramer.JSON.Formatter

  # Called through apply/3: the repository does not depend on Jason.
  @jason Jason
  @jason_formatter Jason.Formatter

  @kib 1024
  @mib 1024 * 1024

  # What the VM may hold on to between the start and the end: allocator
  # caches and the like, not what a batch made.
  @binary_slack 256 * @kib

  @escapes [:json, :unicode_safe, :javascript_safe, :html_safe]

  # What `pretty:` may be, and the formatter's options (`true` as []):
  # the defaults, each separator changed, iodata and empty ones.
  @layouts [
    true,
    [indent: "\t"],
    [indent: "    ", line_separator: "\r\n"],
    [indent: ["-", ?>], after_colon: ""],
    [indent: "", line_separator: "", after_colon: ""]
  ]

  # A layout costs the square of the nesting: deeper terms and texts are
  # not laid out (the scheduler tests lay out deep ones).
  @layout_depth 64

  def main([seconds]) do
    seconds = String.to_integer(seconds)
    checked? = McpFramer.Native.debug_assertions()

    if System.get_env("MCP_FRAMER_CARGO_PROFILE") == "checked" and not checked?,
      do: fail("MCP_FRAMER_CARGO_PROFILE=checked, but the NIF has no debug assertions")

    seed = Seed.seed("SOAK_SEED")
    # First, for a failure that takes the VM down with it.
    {isa, _} = McpFramer.Native.instruction_set()

    IO.puts(
      "soak: SOAK_SEED=#{seed}, the NIF #{with_checks(checked?)} debug assertions, " <>
        "instruction set #{isa}"
    )

    make_known_atoms()
    start = settled_binary_memory()
    deadline = System.monotonic_time(:millisecond) + 1000 * seconds
    totals = run(seed, 1, deadline, %{batches: 0, large: 0, messages: 0, bytes: 0, failures: 0})
    finish = settled_binary_memory()

    IO.puts(
      "soak: #{seconds} s, SOAK_SEED=#{seed}: #{totals.batches} batches " <>
        "(#{totals.large} of them large), " <>
        "#{totals.messages} messages (#{div(totals.bytes, @mib)} MiB), " <>
        "#{totals.failures} failures; binary memory #{start} bytes at the start, " <>
        "#{finish} at the end; #{if jason?(), do: "the oracles checked against Jason", else: "Jason not on the code path"}; " <>
        "the NIF #{with_checks(checked?)} debug assertions"
    )

    cond do
      totals.failures > 0 -> System.halt(1)
      finish > start + @binary_slack -> fail("binary memory grew by #{finish - start} bytes")
      true -> :ok
    end
  end

  defp run(seed, n, deadline, totals) do
    if System.monotonic_time(:millisecond) >= deadline do
      totals
    else
      # A batch that dies (a NIF panic among the causes) is named by its seed.
      {messages, bytes, failures} =
        in_process("SOAK_SEED=#{seed}, batch #{n}", fn -> batch(seed, n) end)

      totals = %{
        batches: totals.batches + 1,
        large: totals.large + if(large_batch?(seed, n), do: 1, else: 0),
        messages: totals.messages + messages,
        bytes: totals.bytes + bytes,
        failures: totals.failures + failures
      }

      run(seed, n + 1, deadline, totals)
    end
  end

  defp in_process(name, fun) do
    {pid, monitor} = spawn_monitor(fn -> exit({:done, fun.()}) end)

    receive do
      {:DOWN, ^monitor, :process, ^pid, {:done, result}} -> result
      {:DOWN, ^monitor, :process, ^pid, reason} -> fail("#{name} died: #{inspect(reason)}")
    end
  end

  # Batch n: a stream with one set of options, checked message by message.
  defp batch(seed, n) do
    where = Seed.case!("SOAK_SEED", seed, n, 1)
    opts = atoms_within_bounds(random_options()) ++ cap()
    chunks = if large_batch?(seed, n), do: large_traffic(), else: traffic()
    plain = McpFramer.new(Keyword.take(opts, [:max_message_bytes]))
    decoding = McpFramer.new([decode: :json] ++ opts)

    {_plain, _decoding, counts} =
      Enum.reduce(chunks, {plain, decoding, {0, 0, 0}}, fn chunk, {plain, decoding, counts} ->
        {tag, messages, plain} = fed(McpFramer.feed(plain, chunk))
        # The oracle goes first: were the NIF to make an atom it should
        # not, the oracle would find it existing.
        expected = for message <- messages, do: expected(message, opts)
        {decoding_tag, items, decoding} = fed(McpFramer.feed(decoding, chunk))

        same_state =
          {tag, McpFramer.buffered_bytes(plain)} ==
            {decoding_tag, McpFramer.buffered_bytes(decoding)}

        counts =
          if same_state, do: counts, else: failed(counts, where, opts, "framers differ", chunk)

        {plain, decoding, check(expected, items, opts, where, counts)}
      end)

    counts
  end

  # Up to 30 lines, cut at random or into Port reads.
  defp traffic do
    lines = for _ <- 1..:rand.uniform(30), do: hostile_line()
    if :rand.uniform(4) == 1, do: Chunks.port(joined(lines)), else: cut(lines, scale())
  end

  # One batch in 10 is of the sizes the scheduler tests feed, with hostile
  # lines around it for the oracles: a message of 2 or 6 MiB among a few
  # others, in chunks of up to 16 MiB. A chunk over 4 MiB is framed on a
  # dirty scheduler (timeslice.rs's NORMAL_CHUNK_MAX), a message over
  # 1 MiB is decoded on one (DECODE_NORMAL_MAX), and a long message cut
  # in several chunks is put together from held pieces, 256 KiB a call
  # (COPY_SLICE). Decided by the seed alone, so that the run can count them;
  # the first batch is always one, so that a short run has one too (make
  # test's 10 s, about 20 batches, had none in about one run of eight).
  defp large_batch?(_seed, 1), do: true
  defp large_batch?(seed, n), do: :erlang.phash2({seed, n}, 10) == 0

  defp large_traffic do
    large = hostile(large_line(Enum.random([2 * @mib, 6 * @mib])))
    lines = Enum.shuffle([large | for(_ <- 1..:rand.uniform(8), do: hostile_line())])
    cut(lines, Enum.random([8 * @mib, 16 * @mib]))
  end

  defp fed({:ok, items, framer}), do: {:ok, items, framer}
  defp fed({:error, :message_too_large, items, framer}), do: {:error, items, framer}

  # A message, the oracle's item for it in a framer, its result for
  # McpFramer.JSON, and, when Jason is there, whether the oracle differs
  # from it on the message without the options Jason does not have.
  defp expected(message, opts) do
    json_opts = Keyword.delete(opts, :max_message_bytes)
    framed = TestJSON.decode(message, decode_options(opts))
    direct = oracle(message, json_opts)
    {message, framed, direct, jason_differs(message, Keyword.take(opts, [:keys, :strings]))}
  end

  defp jason?, do: Code.ensure_loaded?(@jason)

  defp jason_differs(message, opts) do
    if jason?() and not agrees?(message, jason(message, opts), oracle(message, opts)),
      do: "the oracle differs from Jason"
  end

  # Jason's result, its error as McpFramer's, or what it raised.
  defp jason(message, opts) do
    case apply(@jason, :decode, [message, opts]) do
      {:error, error} ->
        {:error, struct!(DecodeError, Map.take(error, [:position, :token, :data]))}

      ok ->
        ok
    end
  rescue
    error in [ArgumentError, SystemLimitError] -> {:raised, error.__struct__}
  end

  defp check(expected, items, opts, where, counts) when length(expected) != length(items),
    do: failed(counts, where, opts, "#{length(items)} items for #{length(expected)} messages", "")

  defp check(expected, items, opts, where, counts) do
    json_opts = Keyword.delete(opts, :max_message_bytes)

    Enum.zip(expected, items)
    |> Enum.reduce(counts, fn {{message, framed, direct, jason_differs}, item},
                              {count, bytes, failures} = counts ->
      differs =
        cond do
          not agrees?(message, item, framed) -> "a framer's item differs"
          not agrees?(message, decoded(message, json_opts), direct) -> "McpFramer.JSON differs"
          jason_differs -> jason_differs
          true -> encoding_differs(direct) || layout_differs(message, direct)
        end

      if differs,
        do: failed(counts, where, opts, differs, message),
        else: {count + 1, bytes + byte_size(message), failures}
    end)
  end

  # A decoded term encoded again by McpFramer.JSON in a random escape and
  # map mode, as a binary, as iodata (whose long plain strings are the
  # term's own binaries) or as a line: nil if it writes the encoding
  # oracle's text, and the oracle Jason's, when Jason is there; else what
  # differs.
  defp encoding_differs({:ok, term}) do
    opts = [escape: Enum.random(@escapes), maps: Enum.random([:naive, :strict])]
    compact = written(TestEncoder.encode(term, opts))
    {form, opts, expected} = encoding(term, opts, compact)
    {text, wanted} = encoded(form, term, opts, expected)

    cond do
      text != wanted ->
        "#{form} with #{inspect(opts)} differs"

      jason?() and written(apply(@jason, :encode, [term, opts])) != expected ->
        "the encoding oracle differs from Jason with #{inspect(opts)}"

      true ->
        nil
    end
  end

  defp encoding_differs(_not_decoded), do: nil

  # One term in four that is not deep is laid out with a random `pretty:`,
  # which a line refuses; the rest go in any form.
  defp encoding(term, opts, compact) do
    if :rand.uniform(4) == 1 and within_depth?(term, @layout_depth) do
      layout = Enum.random(@layouts)
      expected = if compact == :error, do: :error, else: laid_out(compact, layout)
      {Enum.random([:encode, :encode_to_iodata]), opts ++ [pretty: layout], expected}
    else
      {Enum.random([:encode, :encode_to_iodata, :encode_line]), opts, compact}
    end
  end

  defp laid_out(text, layout),
    do: TestFormatter.lay_out(text, TestFormatter.separators(formatter_options(layout)))

  defp formatter_options(true), do: []
  defp formatter_options(options), do: options

  # A message laid out by McpFramer.JSON.Formatter in a random layout and
  # minimized: nil if both are the formatter oracle's, and
  # Jason.Formatter's, when Jason is there and does not raise (it may, on
  # bytes that are not JSON); else what differs.
  defp layout_differs(message, decoded) do
    if layable?(message, decoded) do
      layout = formatter_options(Enum.random(@layouts))

      expected = {laid_out(message, layout), TestFormatter.minimize(message)}

      cond do
        {Formatter.pretty_print(message, layout), Formatter.minimize(message)} != expected ->
          "McpFramer.JSON.Formatter differs with #{inspect(layout)}"

        jason?() and jason_layout(message, layout, decoded) not in [expected, :raised] ->
          "the formatter oracle differs from Jason.Formatter with #{inspect(layout)}"

        true ->
          nil
      end
    end
  end

  # A layout grows with the square of the nesting: a message that decoded
  # at most 64 levels deep. Of one that did not, the brackets that open a
  # level bound its depth, and each comma and bracket starts a line
  # indented at most that deep: at most 64 of them, and 256 Ki such
  # indents, so that strings of any length are laid out.
  defp layable?(_message, {:ok, term}), do: within_depth?(term, @layout_depth)

  defp layable?(message, _not_decoded) do
    levels = length(:binary.matches(message, ["[", "{"]))
    lines = length(:binary.matches(message, [",", "[", "{", "]", "}"]))
    levels <= @layout_depth and levels * lines <= 256 * @kib
  end

  defp jason_layout(message, layout, {:ok, _term}) do
    {apply(@jason_formatter, :pretty_print, [message, layout]),
     apply(@jason_formatter, :minimize, [message])}
  end

  defp jason_layout(message, layout, _not_decoded) do
    jason_layout(message, layout, {:ok, nil})
  rescue
    _ -> :raised
  end

  defp within_depth?(_term, 0), do: false

  defp within_depth?(map, levels) when is_map(map),
    do: Enum.all?(map, fn {_key, value} -> within_depth?(value, levels - 1) end)

  defp within_depth?(list, levels) when is_list(list),
    do: Enum.all?(list, &within_depth?(&1, levels - 1))

  defp within_depth?(_scalar, _levels), do: true

  # What encoding in `form` gave, as a binary, and what it should give.
  defp encoded(form, term, opts, expected) do
    text = written(apply(McpFramer.JSON, form, [term, opts]))
    text = if is_list(text), do: IO.iodata_to_binary(text), else: text
    line? = form == :encode_line and is_binary(expected)
    {text, if(line?, do: expected <> "\n", else: expected)}
  end

  defp written({:ok, text}), do: text
  defp written({:error, _}), do: :error

  # The first few failures of a batch are shown; all are counted.
  defp failed({count, bytes, failures}, where, opts, what, input) do
    if failures < 3, do: IO.puts("#{where}: #{what} with #{inspect(opts)}: #{show(input)}")
    {count, bytes, failures + 1}
  end

  defp show(input) when byte_size(input) > 300,
    do: "#{inspect(binary_part(input, 0, 300))}... (#{byte_size(input)} bytes)"

  defp show(input), do: inspect(input)

  # A line a server might send: an MCP message or JSON of any kind, most
  # often mutated.
  defp hostile_line do
    case :rand.uniform(40) do
      1 -> hostile(large_line(Enum.random([64 * @kib, 512 * @kib])))
      _ -> hostile(line())
    end
  end

  defp hostile(line) do
    line
    |> mutate(:rand.uniform(3) - 1)
    |> :binary.replace("\n", " ", [:global])
  end

  defp mutate(line, 0), do: line
  defp mutate(line, times), do: line |> mutation() |> mutate(times - 1)

  defp mutation(line) do
    case :rand.uniform(8) do
      1 -> flip_bits(line, :rand.uniform(3))
      2 -> binary_part(line, 0, :rand.uniform(byte_size(line) + 1) - 1)
      3 -> splice(line, line())
      4 -> nested(line)
      5 -> inserted(line, huge_number())
      6 -> inserted(line, huge_string())
      7 -> line
      # Two documents on one line: JSON after the first is an error.
      8 -> line <> Enum.random(["", " ", "\t"]) <> line()
    end
  end

  defp flip_bits(line, 0), do: line
  defp flip_bits(<<>>, _flips), do: <<>>

  defp flip_bits(line, flips) do
    # Elixir 1.20 wants `at` pinned in a match's size, which 1.14 refuses.
    at = :rand.uniform(byte_size(line)) - 1
    before = binary_part(line, 0, at)
    rest = binary_part(line, at + 1, byte_size(line) - at - 1)
    bit = Bitwise.bsl(1, :rand.uniform(8) - 1)

    flip_bits(
      <<before::binary, Bitwise.bxor(:binary.at(line, at), bit), rest::binary>>,
      flips - 1
    )
  end

  # The start of one line and the end of another.
  defp splice(line, other) do
    cut = :rand.uniform(byte_size(line) + 1) - 1
    from = :rand.uniform(byte_size(other) + 1) - 1
    binary_part(line, 0, cut) <> binary_part(other, from, byte_size(other) - from)
  end

  # Inside brackets and objects, deep, sometimes not closed.
  defp nested(line) do
    depth = Enum.random([10, 1_000, 100_000])
    {open, close} = Enum.random([{"[", "]"}, {~s({"a":), "}"}])
    closing = if :rand.uniform(4) == 1, do: depth - 1, else: depth
    :binary.copy(open, depth) <> line <> :binary.copy(close, closing)
  end

  defp inserted(line, piece) do
    at = :rand.uniform(byte_size(line) + 1) - 1
    binary_part(line, 0, at) <> piece <> binary_part(line, at, byte_size(line) - at)
  end

  # Integers at and past Jason's limit of 1,024 characters, and floats
  # that overflow or that are long.
  defp huge_number do
    digits = fn count -> for _ <- 1..count, into: "1", do: <<?0 + :rand.uniform(10) - 1>> end

    case :rand.uniform(4) do
      1 -> "-" <> digits.(1000 + :rand.uniform(30))
      2 -> digits.(1000 + :rand.uniform(30))
      3 -> digits.(:rand.uniform(400)) <> "e" <> Integer.to_string(:rand.uniform(400))
      4 -> "0." <> digits.(2000) <> "E-" <> Integer.to_string(:rand.uniform(400))
    end
  end

  # A string of up to a mebibyte, plain or escaped.
  defp huge_string do
    size = Enum.random([1 * @kib, 64 * @kib, @mib])
    IO.iodata_to_binary(string_literal(text(size)))
  end

  # keys: :atoms makes atoms, which are never freed: a long run stops
  # choosing it while half the VM's atom table is left.
  defp atoms_within_bounds(opts) do
    if opts[:keys] == :atoms and
         :erlang.system_info(:atom_count) > div(:erlang.system_info(:atom_limit), 2) do
      Keyword.put(opts, :keys, :atoms!)
    else
      opts
    end
  end

  defp cap do
    case :rand.uniform(5) do
      1 -> [max_message_bytes: Enum.random([64, 4 * @kib, 256 * @kib])]
      _ -> []
    end
  end

  defp scale, do: Enum.random([16, 512, 8 * @kib, 64 * @kib, @mib])

  defp joined(lines), do: IO.iodata_to_binary(for line <- lines, do: [line, "\n"])

  # Binary memory once every process has collected its garbage.
  defp settled_binary_memory do
    for pid <- Process.list(), do: :erlang.garbage_collect(pid)
    Process.sleep(100)
    for pid <- Process.list(), do: :erlang.garbage_collect(pid)
    :erlang.memory(:binary)
  end

  defp with_checks(true), do: "with"
  defp with_checks(false), do: "without"

  defp fail(message) do
    IO.puts("soak: #{message}")
    System.halt(1)
  end
end

McpFramer.Soak.main(System.argv())
