defmodule McpFramer.EncodeMemoryTest do
  # What the text McpFramer.JSON writes keeps alive, as the VM counts it:
  # kept_alive/1 (test/support/memory.ex) sums the shared binaries a
  # process holding a binary lists, and :erlang.memory(:binary) counts
  # every binary. Not async, so that no other test allocates binaries
  # meanwhile.
  use ExUnit.Case, async: false

  import McpFramer.Memory, only: [kept_alive: 1]

  alias McpFramer.JSON

  @mib 1024 * 1024

  # A string of `size` bytes that is a slice of a 1 MiB binary: a copy of
  # it keeps `size` bytes alive, the slice itself 1 MiB.
  defp slice(size, byte \\ ?x) do
    big = :binary.copy(<<byte>>, @mib)
    binary_part(big, 1, size)
  end

  defp parts(iodata), do: iodata |> List.wrap() |> List.flatten()

  test "in iodata, a string of 1,024 bytes or more without escapes is the term's own binary" do
    string = slice(1024)
    iodata = JSON.encode_to_iodata!(%{"text" => string, "n" => 1})
    assert Enum.any?(parts(iodata), &(&1 == string and kept_alive(&1) >= @mib))
    assert IO.iodata_to_binary(iodata) == ~s({"n":1,"text":"#{string}"})

    line = JSON.encode_line!([string])
    assert Enum.any?(parts(line), &(&1 == string and kept_alive(&1) >= @mib))
  end

  # Not ASCII: under escape: :json, é and 日 need no escape either.
  test "in iodata, a string of 1,024 bytes or more without escapes is the term's own binary, whatever its characters" do
    big = :binary.copy("é日", div(@mib, 5) + 1)
    string = binary_part(big, 5, 2000)
    iodata = JSON.encode_to_iodata!(%{"text" => string})
    assert Enum.any?(parts(iodata), &(&1 == string and kept_alive(&1) >= @mib))
    assert IO.iodata_to_binary(iodata) == ~s({"text":"#{string}"})
  end

  test "in iodata, a shorter string, or one with an escape, is copied" do
    for string <- [slice(1023), slice(5000) <> "\n", slice(5000, ?<)] do
      iodata = JSON.encode_to_iodata!(%{"text" => string}, escape: :html_safe)
      assert Enum.all?(parts(iodata), &(kept_alive(&1) < @mib)), inspect(byte_size(string))
    end
  end

  # A string of 16 KiB or more is looked at whole before it is written, as
  # one that may be referred to is: as a key, it is still copied.
  test "in iodata, a map key is copied, however long" do
    for size <- [5000, 20_000] do
      key = slice(size)
      iodata = JSON.encode_to_iodata!(%{key => 1})
      assert Enum.all?(parts(iodata), &(kept_alive(&1) < @mib))
      assert IO.iodata_to_binary(iodata) == ~s({"#{key}":1})
    end
  end

  test "the copied text of iodata is one binary, held in parts" do
    # Long strings referenced, between copied ones too short to be: each
    # copied part is over 64 bytes, so a sub-binary on every OTP release.
    referenced = for i <- 1..5, do: slice(2000 + i)
    copied = for i <- 1..5, do: String.duplicate("c", 500 + i)
    term = Enum.zip_with(copied, referenced, &[&1, &2]) ++ [String.duplicate("e", 300)]
    iodata = JSON.encode_to_iodata!(term)
    parts = Enum.reject(parts(iodata), &(&1 in referenced))
    assert length(parts) == 6
    text = IO.iodata_to_binary(parts)
    assert Enum.map(parts, &kept_alive/1) |> Enum.uniq() == [byte_size(text)]
  end

  test "encode/2 returns one binary of its own, whatever the term holds" do
    text = JSON.encode!(%{"a" => slice(100_000), "b" => slice(2000)})
    assert kept_alive(text) == byte_size(text)
  end

  test "iodata of a 100 MB string without escapes takes next to no memory" do
    blob = :binary.copy("QUJD", 25_000_000)
    :erlang.garbage_collect()
    before = :erlang.memory(:binary)
    iodata = JSON.encode_line!(%{"data" => blob})
    grown = :erlang.memory(:binary) - before
    assert IO.iodata_length(iodata) == byte_size(blob) + byte_size(~s({"data":""}\n))
    assert grown < @mib, "grew by #{grown} bytes"
  end
end
