defmodule McpFramer.Chunks do
  @moduledoc false
  # Streams cut into chunks as a stream-mode Port hands them over: each a
  # binary of its own, never a sub-binary of the stream. The tests draw the
  # sizes; this only cuts.

  @port_read 65_536

  # `size` is a chunk size, or a function that draws the next one from the
  # rest of the stream (0 makes an empty chunk; past the end is the end).
  @spec cut(binary(), pos_integer() | (binary() -> non_neg_integer())) :: [binary()]
  def cut(stream, size) when is_integer(size) and size > 0, do: cut(stream, fn _ -> size end)

  def cut(stream, size) when is_function(size, 1), do: cut(stream, size, [])

  # The chunks between `points`, positions in any order; there is one more
  # chunk than points, and some may be empty.
  @spec at(binary(), [non_neg_integer()]) :: [binary()]
  def at(stream, points) do
    ends = Enum.sort(points) ++ [byte_size(stream)]

    {chunks, _} =
      Enum.map_reduce(ends, 0, fn stop, from ->
        {:binary.copy(binary_part(stream, from, stop - from)), stop}
      end)

    chunks
  end

  # Full 64 KiB reads, as a Port delivers a stream written faster than it
  # is read.
  @spec port(binary()) :: [binary()]
  def port(stream), do: cut(stream, @port_read)

  defp cut(<<>>, _size, chunks), do: Enum.reverse(chunks)

  defp cut(stream, size, chunks) do
    {chunk, rest} = :erlang.split_binary(stream, min(size.(stream), byte_size(stream)))
    cut(rest, size, [:binary.copy(chunk) | chunks])
  end
end
