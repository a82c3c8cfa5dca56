defmodule McpFramer.EncodeProtocolTest do
  # The replies of McpFramer.Native.encode/3 and encode_dirty/3, one test
  # per row of the table in native/mcp_framer_nif/src/encode/mod.rs, and
  # what McpFramer.JSON.Encoder does with each.
  use ExUnit.Case, async: true

  import Bitwise

  alias McpFramer.Native

  # The flags McpFramer.JSON.Encoder packs: bits 0-1 the escape mode, bit 2
  # maps: :strict, bits 3-4 the form (binary, iodata, line).
  @binary 0
  @iodata 8
  @line 16
  @strict 4

  test "a term written whole is {:ok, text}: a binary, or iodata for the other forms" do
    assert Native.encode(%{"a" => [1, nil]}, @binary, nil) == {:ok, ~s({"a":[1,null]})}
    assert Native.encode("x", @line, nil) == {:ok, ~s("x"\n)}

    long = String.duplicate("y", 2000)
    assert {:ok, [~s({"t":"), ^long, ~s("})]} = Native.encode(%{"t" => long}, @iodata, nil)
    assert Native.encode(%{"t" => long}, @binary, nil) == {:ok, ~s({"t":"#{long}"})}
    assert Native.encode_dirty(%{"a" => 1}, @binary, nil) == {:ok, ~s({"a":1})}
  end

  test "a term Jason refuses is {:error, reason}, the reason naming the culprit" do
    assert Native.encode(["a", <<0xFF>>], @binary, nil) ==
             {:error, {:invalid_byte, 0xFF, <<0xFF>>}}

    assert Native.encode(%{"a" => 1, :a => 2}, @strict, nil) == {:error, {:duplicate_key, "a"}}
    assert Native.encode([{1}], @binary, nil) == {:error, {:unsupported, {1}}}
    uri = URI.parse("x")
    assert Native.encode([uri], @binary, nil) == {:error, {:struct, uri}}
    assert Native.encode([1 | 2], @binary, nil) == {:error, {:improper_list, 2}}
  end

  test "a term over a normal scheduler's time is :continue_dirty, and encode_dirty/3 writes it" do
    term = List.duplicate(%{"k" => "value"}, 1_000_000)
    assert Native.encode(term, @binary, nil) == :continue_dirty
    assert {:ok, text} = Native.encode_dirty(term, @binary, nil)
    # Each item and its comma, less the last comma, and the brackets.
    assert byte_size(text) == byte_size(~s({"k":"value"},)) * 1_000_000 + 1
  end

  # Even a plain string is read whole before its text is made: one too
  # long to read within a call is sent to a dirty scheduler unread, also
  # where the iodata would only refer to it.
  test "a string longer than a normal scheduler's call can read is :continue_dirty, in every form" do
    blob = :binary.copy("x", 32 * 1024 * 1024)

    for form <- [@binary, @iodata, @line] do
      assert Native.encode(blob, form, nil) == :continue_dirty
    end

    assert {:ok, [~s("), ^blob, ~s(")]} = Native.encode_dirty(blob, @iodata, nil)
  end

  # A bignum's digits are written in one go that cannot stop, in time that
  # grows with the square of its size: 3 ** 30_000, 14,314 digits, took
  # 1.8 ms and more to write here, past what a normal scheduler's call may
  # run. Its time is known before it starts, so it is sent to a dirty
  # scheduler unwritten, however quiet the machine.
  test "an integer whose digits take longer to write than a call may run is :continue_dirty" do
    integer = 3 ** 30_000
    assert Native.encode([integer], @binary, nil) == :continue_dirty
    assert Native.encode_dirty([integer], @binary, nil) == {:ok, "[#{integer}]"}
  end

  test "a calendar struct or a key only String.Chars turns into text is :convert on the first pass" do
    assert Native.encode([1, ~D[2024-01-02]], @binary, nil) == :convert
    assert Native.encode(%{1.5 => 1}, @binary, nil) == :convert
    assert Native.encode_dirty(%{~c"k" => 1}, @binary, nil) == :convert
  end

  test "a converted term's objects are {tag, pairs} under the call's tag, and what is left is an error" do
    tag = make_ref()
    pairs = {tag, [{"1.5", 1}, {"1.5", 2}]}
    assert Native.encode(pairs, @binary, tag) == {:ok, ~s({"1.5":1,"1.5":2})}
    assert Native.encode(pairs, @strict, tag) == {:error, {:duplicate_key, "1.5"}}
    assert Native.encode({make_ref(), []}, @binary, tag) |> elem(0) == :error
    assert Native.encode(%{{1} => 1}, @binary, tag) == {:error, {:invalid_key, {1}}}
    assert Native.encode(~D[2024-01-02], @binary, tag) == {:error, {:struct, ~D[2024-01-02]}}
  end

  test "McpFramer.JSON converts a term once, in Elixir, and encodes it again" do
    tag = make_ref()

    assert McpFramer.JSON.Encoder.convert(%{1.5 => [~D[2024-01-02]], "k" => ~c"v"}, tag) ==
             {tag, [{"1.5", ["2024-01-02"]}, {"k", ~c"v"}]}

    assert McpFramer.JSON.encode(%{1.5 => [~D[2024-01-02]]}) == {:ok, ~s({"1.5":["2024-01-02"]})}
  end

  # rustler's decoder of a list into a Vec panics at an improper tail: the
  # VM lives on, but the caller got ErlangError :nif_panicked.
  test "the keys of encode_map_order/2 in an improper list are a bad argument" do
    map = Map.new(0..32, &{&1, &1})
    keys = for {key, _} <- Map.to_list(map), do: key
    assert_raise ArgumentError, fn -> Native.encode_map_order(map, keys ++ :tail) end
  end

  test "the order of maps of over 32 pairs is learnt from one map and its keys in Map.to_list/1's order" do
    map = Map.new(0..32, &{&1, &1})
    keys = for {key, _} <- Map.to_list(map), do: key
    assert Native.encode_map_order(map, keys) == :ok
    # Keys in an order the map's iterator gives neither way.
    {first, [second | rest]} = Enum.split(keys, 1)
    assert_raise ErlangError, fn -> Native.encode_map_order(map, [second | first] ++ rest) end
    assert_raise ArgumentError, fn -> Native.encode_map_order(%{a: 1}, [:a]) end
    assert_raise ArgumentError, fn -> Native.encode_map_order(map, tl(keys)) end
    # Once learnt, a large map is written in that order.
    assert Native.encode(map, @binary, nil) ==
             {:ok, "{" <> Enum.map_join(keys, ",", &~s("#{&1}":#{&1})) <> "}"}
  end

  test "flags outside the packed options are a bad argument" do
    assert_raise ArgumentError, fn -> Native.encode(1, 3 <<< 3, nil) end
    assert_raise ArgumentError, fn -> Native.encode(1, 1 <<< 5, nil) end
    assert_raise ArgumentError, fn -> Native.encode(1, -1, nil) end
  end
end
