defmodule McpFramer.Frames do
  @moduledoc false
  # Feeds chunks that frame without an oversized line; returns every message.

  def frame(framer, chunks) do
    {messages, _framer} =
      Enum.flat_map_reduce(chunks, framer, fn chunk, framer ->
        {:ok, messages, framer} = McpFramer.feed(framer, chunk)
        {messages, framer}
      end)

    messages
  end

  # A stream cut as a stream-mode Port reads it: 64 KiB at a time, each
  # read a binary of its own.
  def port_chunks(stream) when byte_size(stream) <= 65_536, do: [:binary.copy(stream)]

  def port_chunks(stream) do
    chunk = binary_part(stream, 0, 65_536)
    [:binary.copy(chunk) | port_chunks(binary_part(stream, 65_536, byte_size(stream) - 65_536))]
  end
end
