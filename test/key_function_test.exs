defmodule McpFramer.KeyFunctionTest do
  # `keys:` given a function, as Jason 1.4.5 takes it: McpFramer.JSON.decode/2
  # calls it on each key where Jason does, once the key's pair is complete
  # (at the `,` or `}` after its value), and builds each map as Jason does.
  # Every result is checked against the oracle, which calls the function
  # where its grammar completes each pair; the calls are recorded on both
  # sides and compared, order included.
  use ExUnit.Case, async: true

  import McpFramer.JSONDocuments, only: [any_document: 0, small_document: 0, random_options: 0]

  import McpFramer.Agreement, only: [oracle_result: 2, same?: 2]

  alias McpFramer.{DecodeError, JSON, Seed, TestJSON}

  # What McpFramer.JSON.decode/2 gives for `line` with the key function
  # `fun`, and the keys it was called on, in order: the same as the
  # oracle's, or the test fails.
  defp decoded(line, fun, opts \\ []) do
    expected = recorded(fn keys -> oracle_result(line, [keys: keys] ++ opts) end, fun)
    direct = recorded(fn keys -> JSON.decode(line, [keys: keys] ++ opts) end, fun)
    assert direct == expected
    direct
  end

  # `decode` run with `fun` as its key function, which records each call.
  defp recorded(decode, fun) do
    ref = make_ref()

    result =
      decode.(fn key ->
        send(self(), {ref, key})
        fun.(key)
      end)

    {result, calls(ref, [])}
  end

  defp calls(ref, acc) do
    receive do
      {^ref, key} -> calls(ref, [key | acc])
    after
      0 -> Enum.reverse(acc)
    end
  end

  # As `decoded/3`, for any result: a term, an error, or what was raised or
  # thrown; terms compared with floats bit for bit.
  defp agreed(line, fun, opts) do
    expected =
      recorded(fn keys -> outcome(fn -> oracle_result(line, [keys: keys] ++ opts) end) end, fun)

    direct =
      recorded(fn keys -> outcome(fn -> JSON.decode(line, [keys: keys] ++ opts) end) end, fun)

    {result, calls} = direct
    {expected_result, expected_calls} = expected

    unless alike?(result, expected_result) and calls == expected_calls do
      flunk("""
      with a key function and #{inspect(opts)}
      input: #{inspect(line)}
        nif:    #{inspect(direct)}
        oracle: #{inspect(expected)}
      """)
    end
  end

  defp alike?({:ok, term}, {:ok, expected}), do: same?(term, expected)
  defp alike?(result, expected), do: result == expected

  defp outcome(decode) do
    decode.()
  rescue
    error -> {:raised, error}
  catch
    thrown -> {:thrown, thrown}
  end

  # Functions that change keys, merge them, raise on one, throw on one.
  defp functions do
    [
      &String.upcase/1,
      fn _key -> :same end,
      fn key -> if String.starts_with?(key, "a"), do: raise(ArgumentError, key), else: key end,
      fn key -> if byte_size(key) == 1, do: throw({:position, 1}), else: key end,
      fn key -> if byte_size(key) == 2, do: throw(:other), else: key end
    ]
  end

  defp run_cases(count, run, check), do: Seed.run_cases("JSON_SEED", count, run, check)

  test "agrees with the oracle, calls included, on 1000 random documents with random options" do
    run_cases(1000, 1, fn _case ->
      line = IO.iodata_to_binary(any_document())
      opts = random_options() |> Keyword.delete(:keys)
      for fun <- functions(), do: agreed(line, fun, opts)
    end)
  end

  test "agrees with the oracle, calls included, on every prefix of 60 random documents" do
    run_cases(60, 2, fn _case ->
      document = IO.iodata_to_binary(small_document())

      for size <- 0..byte_size(document), fun <- functions() do
        agreed(binary_part(document, 0, size), fun, [])
      end
    end)
  end

  test "each key becomes what the function returns for it, at every depth" do
    line = ~s({"a":{"b":[{"c":1},{}]},"d":"e"})
    upcase = &String.upcase/1

    assert {{:ok, %{"A" => %{"B" => [%{"C" => 1}, %{}]}, "D" => "e"}}, _calls} =
             decoded(line, upcase)

    assert {{:ok, %{a: %{b: [%{c: 1}, %{}]}, d: "e"}}, _calls} = decoded(line, &String.to_atom/1)
  end

  test "the function is called once per key, when its pair is complete" do
    # Written out from Jason's decoder: a pair is complete at the `,` or
    # `}` after its value, so an object's inner keys come before its own.
    line = ~s({"a":{"b":1,"c":{"d":2}},"e":[{"f":3}],"a":4})
    assert {{:ok, _}, calls} = decoded(line, & &1)
    assert calls == ["b", "d", "c", "a", "f", "e", "a"]
  end

  test "of keys the function makes equal, the first in the document wins" do
    assert {{:ok, %{same: 1}}, [_, _, _]} = decoded(~s({"a":1,"b":2,"a":3}), fn _ -> :same end)

    assert {{:ok, %{"k" => %{"x" => 1}}}, _} =
             decoded(~s({"k":{"x":1},"K":2}), &String.downcase/1)
  end

  # Past 10,000 pairs the map is made a pair at a time, not in one call.
  test "of keys the function makes equal, the first wins in an object of any size" do
    for pairs <- [9_999, 10_000, 10_001, 30_000] do
      object = "{" <> Enum.map_join(1..pairs, ",", &~s("k#{&1}":#{&1})) <> "}"

      {:ok, map} =
        McpFramer.JSON.decode(object,
          keys: &"k#{rem(String.to_integer(binary_part(&1, 1, byte_size(&1) - 1)), 7)}"
        )

      assert map == Map.new(1..7, &{"k#{rem(&1, 7)}", &1})
    end
  end

  test "keys with escapes reach the function decoded" do
    assert {{:ok, %{"é\n" => 1}}, ["é\n"]} = decoded(~s({"\\u00e9\\n":1}), & &1)
  end

  test "in a document that is not JSON, the pairs completed before the error are converted" do
    for line <- [~s({"a":1,"b":{"c":2},"d"), ~s({"a":1,"b":[1,}), ~s([{"a":1},{"b":2 3}])] do
      assert {{:error, %DecodeError{limit: nil}}, calls} = decoded(line, & &1)
      assert calls != []
    end

    assert {{:error, %DecodeError{position: 13}}, ["a"]} = decoded(~s({"a":1,"b":2 3}), & &1)
  end

  test "an exception the function raises comes out of decode, at the first key that raises" do
    fun = fn
      "bad" -> raise ArgumentError, "bad key"
      key -> key
    end

    # The pair of "bad" completes at its comma, before the syntax error.
    for line <- [~s({"ok":1,"bad":2,"x":3}), ~s({"ok":1,"bad":2,)] do
      assert_raise ArgumentError, "bad key", fn -> JSON.decode(line, keys: fun) end
      assert_raise ArgumentError, "bad key", fn -> TestJSON.decode(line, keys: fun) end
    end

    assert {{:error, %DecodeError{}}, ["ok"]} = decoded(~s({"ok":1,"bad":2 3}), fun)
  end

  test "a thrown position or token becomes a DecodeError, as Jason catches it" do
    line = ~s({"a":1})

    assert {{:error, %DecodeError{position: 3, token: nil, data: ^line}}, ["a"]} =
             decoded(line, fn _ -> throw({:position, 3}) end)

    assert {{:error, %DecodeError{position: 1, token: "a", data: ^line}}, ["a"]} =
             decoded(line, fn key -> throw({:token, key, 1}) end)

    assert catch_throw(JSON.decode(line, keys: fn _ -> throw(:other) end)) == :other
  end

  test "the limits apply as without a function, the keys compared before conversion" do
    line = ~s({"a":1,"A":2,"a":3})

    assert {{:error, %DecodeError{position: 13, limit: :duplicate_keys}}, ["a", "A"]} =
             decoded(line, &String.downcase/1, duplicate_keys: :error)

    line = ~s({"a":[1,2],"b":3})

    assert {{:error, %DecodeError{position: 8, limit: :max_values}}, []} =
             decoded(line, & &1, max_values: 3)

    assert {{:ok, %{"a" => [1, 2]}}, ["a"]} = decoded(~s({"a":[1,2]}), & &1, max_depth: 2)
  end

  test "a document decoded on a dirty scheduler calls it as one decoded on a normal one" do
    pairs = for i <- 1..60_000, do: ~s("k#{i}":{"v":#{i}})
    line = "{" <> Enum.join(pairs, ",") <> "}"
    assert byte_size(line) > 1_000_000
    assert {{:ok, term}, calls} = decoded(line, &String.upcase/1)
    assert map_size(term) == 60_000
    assert term["K7"] == %{"V" => 7}
    assert Enum.take(calls, 4) == ["v", "k1", "v", "k2"]

    # Cut inside the last inner value, the error comes back from the dirty
    # scheduler with the keys of the 59,999 pairs completed, each after
    # its inner "v".
    cut = binary_part(line, 0, byte_size(line) - 3)
    assert {{:error, %DecodeError{}}, calls} = decoded(cut, & &1)
    assert length(calls) == 2 * 59_999
  end

  test "strings: :copy gives the function keys of their own, and a thrown error a copy" do
    key = String.duplicate("k", 100)
    line = :binary.copy(~s({"#{key}":1}) <> "  ")
    line = binary_part(line, 0, byte_size(line) - 2)

    own = fn key ->
      send(self(), {:own, :binary.referenced_byte_size(key) == byte_size(key)})
      key
    end

    assert {{:ok, %{^key => 1}}, [^key]} = decoded(line, own, strings: :copy)
    assert_received {:own, true}

    assert {:error, %DecodeError{data: data}} =
             JSON.decode(line, keys: fn _ -> throw({:position, 1}) end, strings: :copy)

    assert data == line and :binary.referenced_byte_size(data) == byte_size(line)
  end

  test "iodata, top-level scalars and empty containers go through it as through Jason" do
    iodata = [~c'{"a"', ":", [~s({"b":[]})], "}"]

    assert {{:ok, %{"A" => %{"B" => []}}}, ["b", "a"]} =
             decoded(IO.iodata_to_binary(iodata), &String.upcase/1)

    assert {:error, %DecodeError{position: 2, data: ~s({"a":{"b":[]}})}} =
             JSON.decode(iodata, keys: fn _ -> throw({:position, 2}) end)

    for line <- ["1", ~s("s"), "[]", "{}", "[{}]", "null"] do
      assert {{:ok, term}, []} = decoded(line, &String.upcase/1)
      assert term == JSON.decode!(line)
    end
  end

  test "the NIF gives an object's pairs in order for a document, and no framer takes them" do
    pairs = {:reference, :pairs, 0, 0, :first}

    assert McpFramer.Native.decode(~s({"b":[{}],"a":1,"b":2}), pairs) ==
             {:ok, {["b", [{[]}], "a", 1, "b", 2]}}

    assert McpFramer.Native.decode(~s({"a":1,"b"), pairs) ==
             {:error, %DecodeError{position: 10, data: ~s({"a":1,"b")}, ["a"]}

    assert_raise ArgumentError, ~r/decoding options made by McpFramer.JSON/, fn ->
      McpFramer.Native.new(1024, pairs)
    end
  end

  test "a framer refuses a key function, naming McpFramer.JSON.decode/2" do
    assert_raise ArgumentError, ~r/McpFramer.JSON.decode\/2/, fn ->
      McpFramer.new(decode: :json, keys: &String.upcase/1)
    end

    assert_raise ArgumentError, ~r/:keys/, fn -> JSON.decode("{}", keys: fn _, _ -> :ok end) end
  end
end
