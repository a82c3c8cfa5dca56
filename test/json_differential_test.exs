defmodule McpFramer.JSONDifferentialTest do
  # McpFramer.JSON and decoding framers against the oracle in
  # test/support/json.ex, which decodes as Jason 1.4 does, on random
  # documents: MCP messages and generic JSON, valid and not. Terms must be
  # identical (floats bit for bit: on OTP 25, -0.0 === 0.0); errors must
  # have the oracle's position and token, and the input as data.
  #
  # Seeded; reproduce a failure with the JSON_SEED it prints. A failing
  # input is shrunk first, so the message shows a short one.
  use ExUnit.Case, async: true

  import Bitwise
  import McpFramer.Memory, only: [kept_alive: 1]

  alias McpFramer.{Chunks, DecodeError, Seed}
  alias McpFramer.JSON
  alias McpFramer.TestJSON

  @kib 1024
  @mib 1024 * 1024

  # The keys the generators below use, made atoms so that keys: :atoms!
  # takes them; keys of random text stay unknown and are refused.
  @known_keys ~w(a b x é k1 jsonrpc id method params result error code message data
    content type text isError tools name description inputSchema properties required
    arguments echo object string number boolean progress progressToken total image
    mimeType)

  setup_all do
    _atoms = for key <- @known_keys ++ Enum.map(1..70, &"k#{&1}"), do: String.to_atom(key)
    :ok
  end

  describe "McpFramer.JSON.decode/2" do
    test "agrees with the oracle on 4000 random documents, valid and not" do
      run_cases(4000, 0, fn _case ->
        input = placed(any_document())
        check_decode(input, [])
        check_decode(input, strings: :copy)
      end)
    end

    test "agrees with the oracle on every prefix of 150 random documents" do
      run_cases(150, 1, fn _case ->
        document = IO.iodata_to_binary(small_document())

        for size <- 0..byte_size(document) do
          check_decode(binary_part(document, 0, size), [])
        end
      end)
    end

    test "agrees with the oracle on 2000 random documents with random options" do
      run_cases(2000, 7, fn _case ->
        check_decode(placed(any_document()), random_options())
      end)
    end

    test "agrees with the oracle on every prefix of 100 random documents, with random options" do
      run_cases(100, 8, fn _case ->
        document = IO.iodata_to_binary(small_document())
        opts = random_options()

        for size <- 0..byte_size(document) do
          check_decode(binary_part(document, 0, size), opts)
        end
      end)
    end

    test "agrees with the oracle on nesting up to 100_000 deep" do
      run_cases(8, 2, fn _case -> check_decode(IO.iodata_to_binary(deep_document()), []) end)
    end

    test "decode!/2 returns the term or raises the error decode/2 returns" do
      run_cases(300, 3, fn _case ->
        input = IO.iodata_to_binary(any_document())

        case JSON.decode(input) do
          {:ok, term} ->
            assert same?(JSON.decode!(input), term)

          {:error, error} ->
            raised = assert_raise DecodeError, fn -> JSON.decode!(input) end
            same_error(raised, error)
        end
      end)
    end

    test "with strings: :copy, no string keeps the input alive; without, long ones may" do
      text = String.duplicate("plain text ", 10)
      input = :binary.copy(~s({"text":"#{text}","n":[1,"#{text}\\n"]}))

      assert {:ok, %{"text" => ^text} = term} = JSON.decode(input, strings: :copy)
      assert Enum.all?(strings(term), &(kept_alive(&1) == byte_size(&1)))

      assert {:ok, %{"text" => ^text} = term} = JSON.decode(input)

      for string <- strings(term) do
        assert kept_alive(string) in [byte_size(string), byte_size(input)]
      end
    end
  end

  describe "a framer made with decode: :json" do
    test "returns the oracle's items for what a plain framer frames, on 40 random streams" do
      run_cases(40, 4, &check_framers(line_stream(&1), []))
    end

    test "does the same with strings: :copy, and then no string keeps a chunk alive" do
      run_cases(25, 5, &check_framers(line_stream(&1), strings: :copy))
    end

    test "does the same with random decoding options, on 40 random streams" do
      run_cases(40, 9, &check_framers(line_stream(&1), random_options()))
    end

    test "with strings: :copy, no string keeps its chunk alive; without, long ones may" do
      text = String.duplicate("plain text ", 10)
      chunk = :binary.copy(~s({"text":"#{text}"}\n[1]\n{"a":))

      for {opts, sizes} <- [
            {[], [byte_size(text), byte_size(chunk)]},
            {[strings: :copy], [byte_size(text)]}
          ] do
        framer = McpFramer.new([decode: :json] ++ opts)

        assert {:ok, [{:ok, %{"text" => ^text} = term}, {:ok, [1]}], _framer} =
                 McpFramer.feed(framer, chunk)

        assert kept_alive(term["text"]) in sizes
        assert kept_alive(hd(Map.keys(term))) == 4
      end
    end

    test "returns the oracle's items around oversized lines, on 300 random streams" do
      run_cases(300, 6, fn _case ->
        cap = 16 + :rand.uniform(400)
        lines = for _ <- 1..:rand.uniform(20), do: small_line()
        check_framers({lines, cut(lines, 64)}, max_message_bytes: cap)
      end)
    end
  end

  # Running cases: case n of run r is drawn from seed {seed, n, r}, and a
  # failure is prefixed with the JSON_SEED and case that reproduce it.
  # `check` gets n.

  defp run_cases(count, run, check) do
    seed = Seed.seed("JSON_SEED")

    for n <- 1..count do
      Process.put(:where, Seed.case!("JSON_SEED", seed, n, run))

      try do
        check.(n)
      rescue
        error in ExUnit.AssertionError ->
          reraise %{error | message: "#{where()}: #{error.message}"}, __STACKTRACE__

        error ->
          reraise "#{where()}: #{Exception.message(error)}", __STACKTRACE__
      end
    end
  end

  defp where, do: Process.get(:where)

  # McpFramer.JSON against the oracle

  defp check_decode(input, opts) do
    result = decoded(input, opts)

    unless agrees?(input, result, oracle(input, opts)) do
      small = shrunk(input, opts)

      flunk("""
      McpFramer.JSON.decode/2 (#{inspect(opts)}) disagrees with the oracle
      input: #{show(input)}
      shrunk to an input it still gets wrong: #{show(small)}
        nif:    #{inspect(decoded(small, opts))}
        oracle: #{inspect(oracle(small, opts))}
      """)
    end

    # A slice of the input keeps alive at most what the input does.
    check_memory(result, kept_alive(input), opts)
  end

  # McpFramer.JSON.decode/2's result, or what it raised.
  defp decoded(input, opts) do
    JSON.decode(input, opts)
  rescue
    error in [ArgumentError, SystemLimitError] -> {:raised, error.__struct__}
  end

  # The oracle's result for McpFramer.JSON: where a framer's item is an
  # error for a key that cannot become an atom, Jason raises what
  # String.to_existing_atom/1 or (for a key too long) String.to_atom/1 does.
  defp oracle(input, opts) do
    case TestJSON.decode(input, decode_options(opts)) do
      {:error, %{limit: :keys, limit_value: :atoms!}} -> {:raised, ArgumentError}
      {:error, %{limit: :keys, limit_value: :atoms}} -> {:raised, SystemLimitError}
      result -> result
    end
  end

  # The options of the oracle's, of those a decoder is given.
  defp decode_options(opts), do: Keyword.drop(opts, [:strings, :max_message_bytes])

  # Whether a decoder's result is the oracle's for `input`: the same term,
  # or an error at the same position with the same token and limit.
  defp agrees?(_input, {:ok, term}, {:ok, expected}), do: same?(term, expected)

  defp agrees?(input, {:error, %DecodeError{} = error}, {:error, expected}) do
    {error.position, error.token, error.limit, error.limit_value, error.data} ==
      {expected.position, expected.token, expected[:limit], expected[:limit_value], input}
  end

  defp agrees?(_input, {:raised, module}, {:raised, module}), do: true
  defp agrees?(_input, _result, _expected), do: false

  # Random decoding options: limits often generous enough to pass, key
  # options on keys most of which exist as atoms (see random_options/0's
  # atoms), and copied strings now and then.
  defp random_options do
    [
      max_depth: Enum.random([nil, 1, 2, 3, 5, 100]),
      max_values: Enum.random([nil, 1, 3, 10, 50, 1000]),
      duplicate_keys: Enum.random([nil, :first, :error]),
      keys: Enum.random([nil, :strings, :atoms!, :atoms!, :atoms]),
      strings: Enum.random([nil, :reference, :copy])
    ]
    |> Enum.reject(fn {_name, value} -> value == nil end)
    |> Enum.shuffle()
  end

  defp same_error(%DecodeError{} = raised, %DecodeError{} = returned) do
    assert {raised.position, raised.token, raised.data} ==
             {returned.position, returned.token, returned.data}
  end

  # Identical terms. Floats are compared bit for bit; a map must have
  # exactly the expected keys, which also catches a map with a repeated key.
  defp same?(a, b) when is_float(a) and is_float(b), do: <<a::float>> == <<b::float>>

  defp same?(a, b) when is_list(a) and is_list(b),
    do: length(a) == length(b) and Enum.all?(Enum.zip(a, b), fn {x, y} -> same?(x, y) end)

  defp same?(a, b) when is_map(a) and is_map(b) do
    map_size(a) == map_size(b) and Enum.sort(Map.keys(a)) === Enum.sort(Map.keys(b)) and
      Enum.all?(b, fn {key, value} -> same?(Map.fetch!(a, key), value) end)
  end

  defp same?(a, b), do: a === b

  # Decoding framers against plain ones

  # Feeds `chunks` to a plain framer and to a decoding one made with
  # `opts`. After every feed both must return the same tag and hold the
  # same bytes, and the decoder's items must be the oracle's results for
  # the plain framer's messages. stream/2 must emit the same items.
  defp check_framers({lines, chunks}, opts) do
    plain = McpFramer.new(Keyword.take(opts, [:max_message_bytes]))
    decoding = McpFramer.new([decode: :json] ++ opts)

    {expected, _plain, _decoding} =
      Enum.reduce(chunks, {[], plain, decoding}, fn chunk, {expected, plain, decoding} ->
        {tag, messages, plain} = split(McpFramer.feed(plain, chunk))
        {decoding_tag, items, decoding} = split(McpFramer.feed(decoding, chunk))

        assert {decoding_tag, McpFramer.buffered_bytes(decoding)} ==
                 {tag, McpFramer.buffered_bytes(plain)},
               "the decoding framer's tag or buffered bytes differ"

        messages =
          for message <- messages, do: {message, TestJSON.decode(message, decode_options(opts))}

        check_items(items, messages, opts, byte_size(chunk), lines)
        {[messages | expected], plain, decoding}
      end)

    streamed = chunks |> McpFramer.stream([decode: :json] ++ opts) |> Enum.to_list()
    largest = chunks |> Enum.map(&byte_size/1) |> Enum.max(fn -> 0 end)
    check_items(streamed, expected |> Enum.reverse() |> Enum.concat(), opts, largest, lines)
  end

  defp split({:ok, items, framer}), do: {:ok, items, framer}
  defp split({:error, :message_too_large, items, framer}), do: {:error, items, framer}

  # `messages` are the plain framer's, each with the oracle's result.
  defp check_items(items, messages, opts, chunk_size, lines) do
    assert length(items) == length(messages),
           "#{length(items)} items for #{length(messages)} messages " <>
             "of lines #{show(lines)}"

    for {item, {message, expected}} <- Enum.zip(items, messages) do
      unless agrees?(message, item, expected) do
        small = shrunk(message, Keyword.delete(opts, :max_message_bytes))

        flunk("""
        a decoding framer (#{inspect(opts)}) disagrees with the oracle
        message: #{show(message)}
          framer: #{inspect(item, limit: 20, printable_limit: 300)}
          oracle: #{inspect(expected, limit: 20, printable_limit: 300)}
        shrunk to a message McpFramer.JSON.decode/2 still gets wrong (unchanged if none): #{show(small)}
        """)
      end

      check_memory(item, framed_bound(message, chunk_size), opts)
    end
  end

  # A message that lay inside a chunk of `chunk_size` bytes may be a slice
  # of it; one that spanned chunks is a binary of its own: its bytes, a
  # CRLF, and 4 KiB of slack.
  defp framed_bound(message, chunk_size), do: max(chunk_size, byte_size(message) + 2 + 4 * @kib)

  # With strings: :copy no string references more than itself. Without, a
  # string under 64 bytes is its own binary too, and a longer one keeps
  # alive at most `bound` bytes.
  defp check_memory({:ok, term}, bound, opts) do
    copy? = opts[:strings] == :copy

    for string <- strings(term) do
      size = byte_size(string)
      kept = kept_alive(string)
      limit = if copy? or size < 64, do: size, else: max(size, bound)

      assert kept <= limit,
             "a #{size}-byte string keeps #{kept} bytes alive, " <>
               "over #{limit} (#{inspect(opts)})"
    end
  end

  defp check_memory({:error, _error}, _bound, _opts), do: :ok
  defp check_memory({:raised, _module}, _bound, _opts), do: :ok

  # Every binary in a term: keys and values.
  defp strings(term), do: strings(term, [])

  defp strings(term, acc) when is_binary(term), do: [term | acc]
  defp strings(term, acc) when is_list(term), do: Enum.reduce(term, acc, &strings/2)

  defp strings(term, acc) when is_map(term),
    do: Enum.reduce(term, acc, fn {key, value}, acc -> strings(value, strings(key, acc)) end)

  defp strings(_term, acc), do: acc

  # `input` made smaller while McpFramer.JSON.decode/2 still disagrees
  # with the oracle in the same way: both :ok, both :error, or one of each.
  defp shrunk(input, opts) do
    outcomes = fn input -> {elem(decoded(input, opts), 0), elem(oracle(input, opts), 0)} end
    expected = outcomes.(input)

    shrink(input, fn candidate ->
      not agrees?(candidate, decoded(candidate, opts), oracle(candidate, opts)) and
        outcomes.(candidate) == expected
    end)
  end

  # Shrinking: first tries each number and string of the input alone,
  # then drops runs of bytes, halving their length, while the input still
  # fails. Bounded, since each try decodes twice.
  defp shrink(input, fails?) do
    scalars = Regex.scan(~r/-?[0-9][0-9.eE+-]*|"([^"\\]|\\.)*"/, input, capture: :first)

    scalar =
      Enum.find_value(Enum.take(scalars, 500), fn [scalar] -> fails?.(scalar) && scalar end)

    input = scalar || input
    shrink(input, fails?, div(byte_size(input), 2), 2000)
  end

  defp shrink(input, _fails?, 0, _tries), do: input
  defp shrink(input, _fails?, _run, tries) when tries <= 0, do: input

  defp shrink(input, fails?, run, tries) do
    cuts = for at <- 0..(byte_size(input) - run)//run, do: at

    smaller =
      Enum.find_value(Enum.take(cuts, tries), fn at ->
        candidate =
          binary_part(input, 0, at) <> binary_part(input, at + run, byte_size(input) - at - run)

        if fails?.(candidate), do: candidate
      end)

    case smaller do
      nil -> shrink(input, fails?, div(run, 2), tries - length(cuts))
      smaller -> shrink(smaller, fails?, min(run, div(byte_size(smaller), 2)), tries - 1)
    end
  end

  defp show(input) when is_binary(input) and byte_size(input) > 400,
    do: "#{inspect(binary_part(input, 0, 400))}... (#{byte_size(input)} bytes)"

  defp show(input), do: inspect(input, limit: 50, printable_limit: 400, binaries: :as_strings)

  # Documents. A generator returns iodata; `any_document/0` mixes every
  # kind, valid and not.

  defp any_document do
    case :rand.uniform(20) do
      n when n <= 6 -> document(:rand.uniform(5))
      n when n <= 10 -> mcp_message()
      n when n <= 12 -> truncated(document(3))
      n when n <= 15 -> mutated(small_document())
      n when n <= 17 -> token_soup()
      n when n <= 19 -> bad_utf8_document()
      20 -> :rand.bytes(:rand.uniform(40))
    end
  end

  defp small_document do
    case :rand.uniform(3) do
      1 -> mcp_message(:small)
      _ -> document(:rand.uniform(3))
    end
  end

  # The input as a decoder may be given it: a binary of its own, or a
  # slice of a larger one, at a byte or (rarely for a NIF) a bit offset.
  defp placed(iodata) do
    input = IO.iodata_to_binary(iodata)

    case :rand.uniform(6) do
      1 ->
        binary_part(<<0, input::binary, :rand.bytes(70)::binary>>, 1, byte_size(input))

      2 ->
        <<_::3, slice::binary>> = <<0::3, input::binary>>
        slice

      _ ->
        input
    end
  end

  # Valid JSON: a random value, whitespace between any tokens.
  defp document(depth), do: render(value(depth))

  # A value is a tree: {:array, items}, {:object, [{key, value}]} or
  # {:raw, iodata} for a scalar already written out.
  defp value(depth) do
    case :rand.uniform(if depth > 0, do: 12, else: 8) do
      1 -> {:raw, Enum.random(["null", "true", "false"])}
      n when n in 2..4 -> {:raw, number()}
      n when n in 5..8 -> {:raw, string_literal(text())}
      n when n in 9..10 -> {:array, for(_ <- 1..(:rand.uniform(8) - 1)//1, do: value(depth - 1))}
      n when n in 11..12 -> object(depth - 1)
    end
  end

  defp object(depth) do
    case :rand.uniform(8) do
      1 -> {:object, []}
      # Past 32 pairs a map is a hash map; repeated keys, the first wins.
      2 -> {:object, for(_ <- 1..(32 + :rand.uniform(30)), do: {key(40), value(0)})}
      _ -> {:object, for(_ <- 1..:rand.uniform(6), do: {key(8), value(depth)})}
    end
  end

  # Keys from a small pool, so some repeat, sometimes written with escapes
  # that decode to the same key.
  defp key(pool) do
    case :rand.uniform(10) do
      1 -> string_literal(text())
      2 -> Enum.random([~S("\u0061"), ~S("\u0062"), ~S("k\u0031"), ~S("\u00e9")])
      3 -> Enum.random([~s("a"), ~s("b"), ~s("k1"), ~s("é")])
      _ -> ~s("k#{:rand.uniform(pool)}")
    end
  end

  defp render({:raw, iodata}), do: [ws(), iodata, ws()]
  defp render({:array, []}), do: [ws(), "[", ws(), "]", ws()]

  defp render({:array, items}),
    do: [ws(), "[", Enum.intersperse(Enum.map(items, &render/1), ","), "]", ws()]

  defp render({:object, []}), do: [ws(), "{", ws(), "}", ws()]

  defp render({:object, pairs}) do
    pairs = for {key, value} <- pairs, do: [ws(), key, ws(), ":", render(value)]
    [ws(), "{", Enum.intersperse(pairs, ","), "}", ws()]
  end

  # Mostly none; otherwise a run of JSON's four whitespace bytes.
  defp ws do
    case :rand.uniform(6) do
      1 -> for _ <- 1..:rand.uniform(3), do: Enum.random([" ", "\t", "\r", "\n"])
      _ -> ""
    end
  end

  # Around 64 bits, and past them.
  @edge_integers ~w(0 -0 9223372036854775807 -9223372036854775808 9223372036854775808
                    -9223372036854775809 18446744073709551615 18446744073709551616)

  # Rounding edges, the largest and smallest doubles, overflow, underflow.
  @edge_floats ~w(-0.0 0.0 0e0 1E2 1e-400 -1.5e-400 1e400 -1e400 1.7976931348623157e308
                  1.7976931348623158e308 1.7976931348623159e308 2.2250738585072011e-308
                  2.2250738585072014e-308 4.9e-324 2.4703282292062328e-324
                  2.4703282292062327e-324 9007199254740993.0 0.1 1e-99999999999999999999
                  1e99999999999999999999 123456789012345678901234567890.5e-10)

  defp number do
    case :rand.uniform(11) do
      1 -> Integer.to_string(:rand.uniform(200) - 100)
      2 -> Integer.to_string(:rand.uniform(1 <<< 62) * Enum.random([1, -1]))
      3 -> Enum.random(@edge_integers)
      4 -> [Enum.random(["", "-"]), ?1 + :rand.uniform(9) - 1, digits(18 + :rand.uniform(60))]
      5 -> Float.to_string((:rand.uniform() - 0.5) * :math.pow(10, :rand.uniform(40) - 20))
      n when n in 6..7 -> float_text()
      8 -> Enum.random(@edge_floats)
      9 -> [Integer.to_string(:rand.uniform(99)), Enum.random(["e", "E"]), exponent()]
      10 -> ["-0", Enum.random(["e", "E", ".0e", ".0E"]), exponent()]
      11 -> ["0.", digits(:rand.uniform(20))]
    end
  end

  # -?(0|[1-9]digits)(.digits)?([eE][+-]?digits)? with at least one of the
  # fraction and the exponent, often near a rounding boundary: 17 to 25
  # significant digits.
  defp float_text do
    integer =
      if :rand.uniform(3) == 1,
        do: "0",
        else: [Integer.to_string(:rand.uniform(9)), digits(:rand.uniform(12) - 1)]

    fraction = if :rand.uniform(4) > 1, do: [".", digits(:rand.uniform(25))], else: []

    exponent =
      if fraction == [] or :rand.uniform(2) == 1,
        do: [Enum.random(["e", "E"]), exponent()],
        else: []

    [Enum.random(["", "-"]), integer, fraction, exponent]
  end

  defp exponent do
    sign = Enum.random(["", "+", "-"])

    case :rand.uniform(4) do
      1 -> [sign, digits(:rand.uniform(4))]
      2 -> [sign, Integer.to_string(:rand.uniform(330))]
      3 -> [sign, "00", Integer.to_string(:rand.uniform(9))]
      4 -> [sign, Integer.to_string(300 + :rand.uniform(30))]
    end
  end

  defp digits(count), do: for(_ <- 1..count//1, do: ?0 + :rand.uniform(10) - 1)

  # Text as Elixir strings, written as JSON by string_literal/1.
  defp text do
    case :rand.uniform(8) do
      1 -> ""
      # Long: about 64 bytes and more, where strings may be sub-binaries.
      2 -> plain_text(60 + :rand.uniform(200))
      3 -> text(60 + :rand.uniform(200))
      _ -> Enum.map_join(1..:rand.uniform(4), " ", fn _ -> word() end)
    end
  end

  # At least `size` bytes of words.
  defp text(size), do: words(size, &word/0)

  # The same with no byte that must be escaped.
  defp plain_text(size), do: words(size, &plain_word/0)

  defp words(size, word), do: words(size, word, "")
  defp words(size, _word, text) when byte_size(text) >= size, do: text
  defp words(size, word, text), do: words(size, word, text <> " " <> word.())

  defp plain_word do
    case :rand.uniform(5) do
      1 -> <<random_char()::utf8>>
      _ -> for _ <- 1..:rand.uniform(10), into: "", do: <<?a + :rand.uniform(26) - 1>>
    end
  end

  defp word do
    case :rand.uniform(10) do
      1 -> Enum.random(["é", "€", "😀", "日本語", "Ω", "\u00a0", "\x7f", "𝄞"])
      2 -> Enum.random(["\"", "\\", "/", "\n", "\t", "\r", "\b", "\f", <<0>>, <<0x1F>>])
      3 -> <<random_char()::utf8>>
      _ -> for _ <- 1..:rand.uniform(10), into: "", do: <<?a + :rand.uniform(26) - 1>>
    end
  end

  defp random_char do
    char =
      Enum.random([
        0x20 + :rand.uniform(0x5F) - 1,
        0x80 + :rand.uniform(0x780) - 1,
        0x800 + :rand.uniform(0xF800) - 1,
        0x10000 + :rand.uniform(0x100000) - 1
      ])

    if char in 0xD800..0xDFFF or char in [?", ?\\], do: 0xFFFD, else: char
  end

  # A JSON string for `text`: what must be escaped is, and now and then
  # anything else is too, as \uXXXX (a surrogate pair past the BMP, in
  # either case) or \/.
  defp string_literal(text) do
    escape_rate = Enum.random([0, 0, 5, 30])
    [?", for(<<char::utf8 <- text>>, do: escape(char, escape_rate)), ?"]
  end

  defp escape(?", _rate), do: ~S(\")
  defp escape(?\\, _rate), do: ~S(\\)
  defp escape(?\n, _rate), do: ~S(\n)
  defp escape(?\t, _rate), do: ~S(\t)
  defp escape(?\r, _rate), do: ~S(\r)
  defp escape(?\b, _rate), do: ~S(\b)
  defp escape(?\f, _rate), do: ~S(\f)
  defp escape(char, _rate) when char < 0x20, do: unicode_escape(char)

  defp escape(char, rate) do
    cond do
      rate == 0 or :rand.uniform(100) > rate -> <<char::utf8>>
      char == ?/ -> ~S(\/)
      char >= 0x10000 -> surrogate_pair(char)
      true -> unicode_escape(char)
    end
  end

  defp unicode_escape(code) do
    hex = code |> Integer.to_string(16) |> String.pad_leading(4, "0")
    ["\\u", if(:rand.uniform(2) == 1, do: String.downcase(hex), else: hex)]
  end

  defp surrogate_pair(char) do
    code = char - 0x10000
    [unicode_escape(0xD800 + (code >>> 10)), unicode_escape(0xDC00 + (code &&& 0x3FF))]
  end

  # MCP traffic: JSON-RPC requests, notifications, results and errors.

  defp mcp_message(size \\ :any) do
    id =
      Enum.random([
        {:raw, Integer.to_string(:rand.uniform(10_000))},
        {:raw, ~s("req-#{:rand.uniform(99)}")}
      ])

    jsonrpc = {~s("jsonrpc"), {:raw, ~s("2.0")}}

    body =
      case :rand.uniform(if size == :small, do: 4, else: 7) do
        1 -> [{~s("method"), {:raw, ~s("notifications/progress")}}, {~s("params"), progress()}]
        2 -> [{~s("id"), id}, {~s("method"), {:raw, ~s("tools/call")}}, {~s("params"), call()}]
        3 -> [{~s("id"), id}, {~s("error"), rpc_error()}]
        4 -> [{~s("id"), id}, {~s("result"), text_result(1 + :rand.uniform(200))}]
        5 -> [{~s("id"), id}, {~s("result"), text_result(:rand.uniform(30 * @kib))}]
        6 -> [{~s("id"), id}, {~s("result"), tools_list(:rand.uniform(12))}]
        7 -> [{~s("id"), id}, {~s("result"), image_result(:rand.uniform(20 * @kib))}]
      end

    render({:object, Enum.shuffle([jsonrpc | body])})
  end

  defp progress do
    {:object,
     [
       {~s("progressToken"), {:raw, string_literal("tok-#{:rand.uniform(999)}")}},
       {~s("progress"), {:raw, number()}},
       {~s("total"), {:raw, "100"}},
       {~s("message"), {:raw, string_literal(text())}}
     ]}
  end

  defp call do
    arguments = for _ <- 1..:rand.uniform(4), do: {key(8), value(2)}
    {:object, [{~s("name"), {:raw, ~s("echo")}}, {~s("arguments"), {:object, arguments}}]}
  end

  defp rpc_error do
    {:object,
     [
       {~s("code"), {:raw, Enum.random(["-32601", "-32602", "-32603", "-32000"])}},
       {~s("message"), {:raw, string_literal(text())}}
     ]}
  end

  # Text content with escapes and non-ASCII, about `size` bytes.
  defp text_result(size) do
    content =
      {:object,
       [{~s("type"), {:raw, ~s("text")}}, {~s("text"), {:raw, string_literal(text(size))}}]}

    {:object, [{~s("content"), {:array, [content]}}, {~s("isError"), {:raw, "false"}}]}
  end

  defp tools_list(count),
    do: {:object, [{~s("tools"), {:array, for(n <- 1..count, do: tool(n))}}]}

  defp tool(n) do
    properties =
      for p <- 1..:rand.uniform(6) do
        type = {~s("type"), {:raw, Enum.random([~s("string"), ~s("number"), ~s("boolean")])}}
        {~s("arg#{p}"), {:object, [type, {~s("description"), {:raw, string_literal(text())}}]}}
      end

    schema =
      {:object,
       [
         {~s("type"), {:raw, ~s("object")}},
         {~s("properties"), {:object, properties}},
         {~s("required"), {:array, [{:raw, ~s("arg1")}]}}
       ]}

    {:object,
     [
       {~s("name"), {:raw, ~s("tool_#{n}")}},
       {~s("description"), {:raw, string_literal(text())}},
       {~s("inputSchema"), schema}
     ]}
  end

  # A base64 blob: one long string with no escapes.
  defp image_result(size) do
    blob = {:raw, [?", Base.encode64(:rand.bytes(size)), ?"]}

    content =
      {:object,
       [
         {~s("type"), {:raw, ~s("image")}},
         {~s("data"), blob},
         {~s("mimeType"), {:raw, ~s("image/png")}}
       ]}

    {:object, [{~s("content"), {:array, [content]}}]}
  end

  # Deep nesting, as arrays or objects, sometimes left open.
  defp deep_document do
    depth = Enum.random([100, 1000, 10_000, 100_000]) - :rand.uniform(50)

    {open, close} =
      case :rand.uniform(3) do
        1 -> {"[", "]"}
        2 -> {~s({"a":), "}"}
        3 -> {~s([{"k":[), "]}]"}
      end

    inner = Enum.random(["1", "[]", "{}", ~s("x"), ""])
    closes = List.duplicate(close, depth)
    closes = if :rand.uniform(4) == 1, do: Enum.drop(closes, 1), else: closes
    [List.duplicate(open, depth), inner, closes]
  end

  # Invalid documents

  # A prefix: almost every one is an unexpected end.
  defp truncated(iodata) do
    document = IO.iodata_to_binary(iodata)
    binary_part(document, 0, :rand.uniform(byte_size(document) + 1) - 1)
  end

  # One to three bytes replaced, inserted or deleted.
  defp mutated(iodata) do
    Enum.reduce(1..:rand.uniform(3), IO.iodata_to_binary(iodata), fn _, document ->
      at = :rand.uniform(byte_size(document) + 1) - 1
      {before, rest} = :erlang.split_binary(document, at)

      case {:rand.uniform(3), rest} do
        {1, <<_, rest::binary>>} -> <<before::binary, mutant_byte(), rest::binary>>
        {2, rest} -> <<before::binary, mutant_byte(), rest::binary>>
        {3, <<_, rest::binary>>} -> before <> rest
        {_, <<>>} -> <<before::binary, mutant_byte()>>
      end
    end)
  end

  defp mutant_byte do
    case :rand.uniform(3) do
      1 ->
        :rand.uniform(256) - 1

      _ ->
        Enum.random(
          ~c"{}[],:\"\\ \t\r\nu0123456789.eE+-tfnaxl" ++ [0, 0x1F, 0x7F, 0x80, 0xC3, 0xED, 0xFF]
        )
    end
  end

  @soup ~w|{ } [ ] , : 1 - 0 01 . e E + 1.5 -0 2. 1e400 true tru null nul false NaN Infinity \\ é| ++
          ~w|" "a" "k1": "\\u "\\ud800" "\\udc00" "\\ud83d\\ude00" "\\u12" "\\u00e9" "\\x"| ++
          [<<0xFF>>, <<0xC3>>, <<0>>, "\f", "\u00a0"]

  defp token_soup do
    for _ <- 1..:rand.uniform(12), do: [Enum.random(@soup), ws()]
  end

  # A valid document but for bad UTF-8 in one string (or key).
  defp bad_utf8_document do
    bad = {:raw, [?", word(), bad_utf8(), word(), ?"]}

    case :rand.uniform(3) do
      1 -> render(bad)
      2 -> render({:array, [value(1), bad, value(1)]})
      3 -> render({:object, [{key(4), value(1)}, {[?", bad_utf8(), ?"], {:raw, "1"}}]})
    end
  end

  defp bad_utf8 do
    Enum.random([
      <<0x80>>,
      <<0xBF>>,
      <<0xC0, 0xAF>>,
      <<0xC1, 0x81>>,
      <<0xE0, 0x80, 0x80>>,
      <<0xE2, 0x82>>,
      <<0xED, 0xA0, 0x80>>,
      <<0xED, 0xBF, 0xBF>>,
      <<0xF0, 0x80, 0x80, 0x80>>,
      <<0xF4, 0x90, 0x80, 0x80>>,
      <<0xF5, 0x80, 0x80, 0x80>>,
      <<0xFE>>,
      <<0xFF>>,
      <<0xC3>>,
      <<0xF0, 0x9F, 0x98>>
    ])
  end

  # Line streams for the framers

  # Lines, each framed by "\n" or "\r\n", blank ones included, and the
  # stream cut into chunks that are each a binary of their own. Some lines
  # are over 64 KiB; case n has one over 1 MiB when n is 1, 9, 17, ...
  defp line_stream(n) do
    lines = for _ <- 1..(5 + :rand.uniform(40)), do: line()

    lines =
      lines ++ for _ <- 1..:rand.uniform(2)//1, :rand.uniform(2) == 1, do: large_line(64 * @kib)

    lines = if rem(n, 8) == 1, do: [large_line(@mib) | lines], else: lines
    lines = Enum.shuffle(lines)

    scale =
      if Enum.any?(lines, &(byte_size(&1) > @mib)),
        do: 16 * @kib,
        else: Enum.random([16, 512, 8 * @kib, 64 * @kib])

    {lines, cut(lines, scale)}
  end

  defp line do
    case :rand.uniform(4) do
      1 -> single_line(mcp_message())
      _ -> small_line()
    end
  end

  defp small_line do
    case :rand.uniform(12) do
      n when n <= 5 -> single_line(mcp_message(:small))
      n when n <= 7 -> single_line(document(:rand.uniform(3)))
      8 -> single_line(mutated(small_document()))
      9 -> single_line(truncated(small_document()))
      10 -> single_line(Enum.random([token_soup(), bad_utf8_document()]))
      11 -> Enum.random(["", "  ", "\t", "\r"])
      12 -> single_line(:rand.bytes(:rand.uniform(30)))
    end
  end

  # A line of `size` bytes or somewhat more: a blob, long text with
  # escapes, or a tools/list result; sometimes cut short or made invalid
  # near its end. Text and tools are one rendered piece repeated, which
  # keeps the generator cheap.
  defp large_line(size) do
    line =
      case :rand.uniform(3) do
        1 ->
          blob = image_result(div(size * 3, 4) + :rand.uniform(div(size, 4)))
          render({:object, [{~s("result"), blob}]})

        2 ->
          [?", text, ?"] = string_literal(text(4 * @kib))
          [~s({"result":{"content":[{"type":"text","text":"), repeated(text, size, ""), ~s("}]}})]

        3 ->
          tools = repeated(render(tool(:rand.uniform(99))), size, ",")
          [~s({"jsonrpc":"2.0","id":7,"result":{"tools":[), tools, "]}}"]
      end

    line = single_line(line)

    case :rand.uniform(4) do
      1 -> binary_part(line, 0, byte_size(line) - :rand.uniform(10))
      2 -> mutate_near_end(line)
      _ -> line
    end
  end

  # Copies of `piece`, `separator` between them, to at least `size` bytes.
  defp repeated(piece, size, separator) do
    piece = IO.iodata_to_binary(piece)
    Enum.intersperse(List.duplicate(piece, div(size, byte_size(piece)) + 1), separator)
  end

  defp mutate_near_end(line) do
    at = byte_size(line) - :rand.uniform(100)
    {before, <<_, rest::binary>>} = :erlang.split_binary(line, at)
    <<before::binary, Enum.random([0x01, 0xFF, ?", ?]]), rest::binary>>
  end

  # JSON needs no newline but as whitespace, which a space replaces.
  defp single_line(iodata),
    do: iodata |> IO.iodata_to_binary() |> :binary.replace("\n", " ", [:global])

  # Joins lines with "\n" or "\r\n" and cuts the stream into chunks of 1 to
  # `scale` bytes, or through the next newline, each a fresh binary.
  defp cut(lines, scale) do
    stream = IO.iodata_to_binary(for line <- lines, do: [line, Enum.random(["\n", "\r\n"])])
    cut_stream(stream, scale)
  end

  # Cut anywhere, up to `scale` bytes, or now and then just after a newline.
  defp cut_stream(stream, scale) do
    Chunks.cut(stream, fn rest ->
      case {:rand.uniform(8), :binary.match(rest, "\n")} do
        {1, {at, 1}} -> at + 1
        _ -> :rand.uniform(scale)
      end
    end)
  end
end
