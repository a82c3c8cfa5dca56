defmodule McpFramer.JSONDifferentialTest do
  # McpFramer.JSON and decoding framers against the oracle in
  # test/support/json.ex, which decodes as Jason 1.4.5 does, on random
  # documents (test/support/json_documents.ex): MCP messages and generic
  # JSON, valid and not, with and without decoding options. Terms must be
  # identical (floats bit for bit: on OTP 25, -0.0 === 0.0); errors must
  # have the oracle's position, token and limit, and the input as data
  # (test/support/agreement.ex).
  #
  # Seeded; reproduce a failure with the JSON_SEED it prints. A failing
  # input is shrunk first, so the message shows a short one.
  use ExUnit.Case, async: true

  import McpFramer.Agreement
  import McpFramer.JSONDocuments
  import McpFramer.Memory, only: [kept_alive: 1]

  alias McpFramer.{DecodeError, Seed}
  alias McpFramer.JSON
  alias McpFramer.TestJSON

  @kib 1024

  setup_all do
    make_known_atoms()
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

  defp run_cases(count, run, check), do: Seed.run_cases("JSON_SEED", count, run, check)

  # McpFramer.JSON against the oracle

  # The oracle goes first: were the NIF to make an atom it should not, the
  # oracle would find it existing.
  defp check_decode(input, opts) do
    expected = oracle(input, opts)
    result = decoded(input, opts)

    unless agrees?(input, result, expected) do
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

  defp same_error(%DecodeError{} = raised, %DecodeError{} = returned) do
    assert {raised.position, raised.token, raised.data} ==
             {returned.position, returned.token, returned.data}
  end

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

        messages =
          for message <- messages, do: {message, TestJSON.decode(message, decode_options(opts))}

        {decoding_tag, items, decoding} = split(McpFramer.feed(decoding, chunk))

        assert {decoding_tag, McpFramer.buffered_bytes(decoding)} ==
                 {tag, McpFramer.buffered_bytes(plain)},
               "the decoding framer's tag or buffered bytes differ"

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
end
