defmodule McpFramer.NativeArgumentsTest do
  # McpFramer.Native's functions get their arguments from McpFramer and
  # McpFramer.JSON, but any caller can reach them. rustler catches a
  # panic and raises ErlangError :nif_panicked, after a backtrace on
  # stderr: given any terms, each function must return or raise a plain
  # error instead. Seeded; reproduce a failure with the NATIVE_SEED it
  # prints.
  use ExUnit.Case, async: true

  alias McpFramer.{Native, Seed}

  @cases 2_000
  @functions [
    new: 2,
    feed: 3,
    feed_dirty: 3,
    buffered_bytes: 2,
    settings: 1,
    decode: 2,
    decode_dirty: 2,
    decode_framed_dirty: 2,
    encode: 3,
    encode_dirty: 3,
    encode_map_order: 2,
    pretty: 2,
    pretty_dirty: 2
  ]

  test "no NIF function panics, whatever terms it is given" do
    Seed.run_cases("NATIVE_SEED", @cases, 0, fn _n ->
      for {function, arity} <- @functions,
          args = for(_ <- 1..arity, do: term(2)),
          panics?(function, args) do
        flunk("McpFramer.Native.#{function}(#{Enum.map_join(args, ", ", &inspect/1)}) panicked")
      end
    end)
  end

  defp panics?(function, args) do
    apply(Native, function, args)
    false
  rescue
    error -> match?(%ErlangError{original: :nif_panicked}, error)
  end

  # A term at most `depth` levels deep, of every kind: among them the
  # kinds the functions take (framers' resources, the decoding options
  # and pretty:'s separators as tuples, unsigned integers, binaries),
  # and improper lists.
  defp term(0), do: leaf()

  defp term(depth) do
    case :rand.uniform(8) do
      1 -> for _ <- 1..:rand.uniform(3), do: term(depth - 1)
      2 -> List.to_tuple(for _ <- 1..(:rand.uniform(6) - 1)//1, do: term(depth - 1))
      3 -> Map.new(1..:rand.uniform(3), fn _ -> {term(depth - 1), term(depth - 1)} end)
      4 -> [term(depth - 1) | term(depth - 1)]
      5 -> decode_options()
      6 -> {binary(), binary(), binary(), binary()}
      _ -> leaf()
    end
  end

  # Each field valid or not.
  defp decode_options do
    {Enum.random([:reference, :copy, leaf()]), Enum.random([:strings, :atoms, :pairs, leaf()]),
     Enum.random([0, 2, leaf()]), Enum.random([0, 10, leaf()]),
     Enum.random([:first, :last, :error, leaf()])}
  end

  defp leaf do
    case :rand.uniform(9) do
      1 -> Enum.random([nil, true, :first, :strings, :json, :""])
      2 -> Enum.random([0, 1, -1, 255, 4096, 2 ** 32, 2 ** 64 - 1, 2 ** 64, -(2 ** 63), 2 ** 200])
      3 -> 1.5
      4 -> binary()
      5 -> Enum.random([make_ref(), self(), &Function.identity/1])
      6 -> McpFramer.new().resource
      7 -> McpFramer.new(decode: :json).resource
      _ -> []
    end
  end

  defp binary do
    Enum.random([
      "",
      "\n",
      "{}\n",
      ~s({"a":[1,{"b":null}]}\n[),
      "[1,",
      <<0xFF, ?\n>>,
      :binary.copy("[", 100),
      <<1::3>>,
      ~s("\\u),
      :rand.bytes(:rand.uniform(32))
    ])
  end
end
