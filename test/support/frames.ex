defmodule McpFramer.Frames do
  @moduledoc false
  # Feeds chunks that frame without an oversized line; returns every
  # message. And the NIF's own replies to a chunk, call after call.

  def frame(framer, chunks) do
    {messages, _framer} =
      Enum.flat_map_reduce(chunks, framer, fn chunk, framer ->
        {:ok, messages, framer} = McpFramer.feed(framer, chunk)
        {messages, framer}
      end)

    messages
  end

  # McpFramer.Native.feed/3's replies to `chunk` from `generation` on, each
  # :continue answered with the rest of the chunk and each :copying with
  # the same chunk, as McpFramer.feed/2 answers them, and the generation
  # after the last.
  def native_replies(resource, generation, chunk) do
    reply = McpFramer.Native.feed(resource, generation, chunk)

    consumed =
      case reply do
        {:decode_dirty, {:continue, _, _, consumed}} -> consumed
        {:continue, _, _, consumed} -> consumed
        :copying -> 0
        _ -> nil
      end

    if consumed do
      rest = binary_part(chunk, consumed, byte_size(chunk) - consumed)
      {replies, last} = native_replies(resource, generation + 1, rest)
      {[reply | replies], last}
    else
      {[reply], generation + 1}
    end
  end
end
